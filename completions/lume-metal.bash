# bash completion for lume-metal (installed as share/bash-completion/completions/lume-metal).
# The flag lists follow `lume-metal help CMD`; tests/install/t-completion.sh checks they agree.

_lume_metal_flags() {
	local conn="-u --user -i --identity --password-file --known-hosts --accept-new --host --hosts
		--lume --port --wait --all --lume-default-password --timeout --parallel --state --json --format"
	local payload="--payload --target --profile --workload"
	local validation="--model --text --chunks --llama-perplexity"
	case $1 in
	build) echo "--target --profile --workload -o --output --json --format" ;;
	verify) echo "--sha256-file --json --format" ;;
	probe) echo "$conn $payload --order" ;;
	deploy) echo "$conn $payload --order --image --force --dry-run --validate-workload $validation --canary --batch
		--max-fail --rollback-on-fail --verdicts --confirm-timeout --confirm-settle" ;;
	golden) echo "$conn $payload $validation --evidence --image --pull --pull-registry --pull-organization
		--registry --organization --additional-tags --build-vm --keep --dry-run" ;;
	status) echo "$conn --image --order --verdicts --textfile" ;;
	rollback) echo "$conn $payload --to --image --no-probe --order" ;;
	ledger) echo "--image --json --csv --state --keep --dry-run" ;;
	key) echo "--json" ;;
	inventory) echo "--hosts --list --host -u --user --json --format" ;;
	host) echo "$conn" ;;
	bench) echo "$conn --model --llama-bench -p -n -r --threads --host-baseline --host-llama-bench
		--host-model --allow-different-model --min-samples --evidence --workload --image" ;;
	validate) echo "$conn $payload $validation --evidence --image --order" ;;
	report) echo "--workload --csv --markdown --json --min-samples --ledger --image --state --html" ;;
	config) echo "--host --json --format -u --user -i --identity --password-file --known-hosts --state
		--parallel --lume --registry --organization" ;;
	esac
}

_lume_metal() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmds="build verify probe deploy golden status rollback ledger key inventory host bench validate report config help"
	local cmd="" i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	COMPREPLY=()
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "--version --help" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$cmds" -- "$cur")
		fi
		return
	fi
	case $prev in
	--target) mapfile -t COMPREPLY < <(compgen -W "macos linux-sim" -- "$cur"); return ;;
	--to) mapfile -t COMPREPLY < <(compgen -W "previous none" -- "$cur"); return ;;
	--format)
		case $cmd in
		status) mapfile -t COMPREPLY < <(compgen -W "json text junit openmetrics" -- "$cur") ;;
		deploy | rollback | validate | golden) mapfile -t COMPREPLY < <(compgen -W "json text junit" -- "$cur") ;;
		*) mapfile -t COMPREPLY < <(compgen -W "json text" -- "$cur") ;;
		esac
		return ;;
	--order) mapfile -t COMPREPLY < <(compgen -W "finish input" -- "$cur"); return ;;
	-i | --identity | --password-file | --known-hosts | --hosts | --payload | --sha256-file | \
		-o | --output | --lume | --model | --llama-bench | --host-llama-bench | --host-model | --profile | \
		--text | --llama-perplexity | --html)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
	--state | --evidence | --textfile) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
	-u | --user | --host | --port | --wait | --timeout | --parallel | --image | --workload | \
		--canary | --batch | --max-fail | -p | -n | -r | --threads | --min-samples | --chunks | \
		--pull | --pull-registry | --pull-organization | --registry | --organization | --additional-tags | \
		--build-vm)
		return ;;
	esac
	if [[ $cmd == help ]]; then
		mapfile -t COMPREPLY < <(compgen -W "${cmds% help}" -- "$cur")
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_lume_metal_flags "$cmd") --help" -- "$cur")
		return
	fi
	case $cmd in
	ledger) [[ $COMP_CWORD -eq $((i + 1)) ]] && mapfile -t COMPREPLY < <(compgen -W "show export merge push pull prune" -- "$cur") ;;
	host) [[ $COMP_CWORD -eq $((i + 1)) ]] && mapfile -t COMPREPLY < <(compgen -W "status enable disable" -- "$cur") ;;
	verify) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	report) mapfile -t COMPREPLY < <(compgen -W "stock= shim= host=" -- "$cur") ;;
	esac
	if [[ $cmd == ledger && ${COMP_WORDS[i + 1]} == merge && $COMP_CWORD -gt $((i + 1)) ]]; then
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
	return 0
}
complete -F _lume_metal lume-metal
