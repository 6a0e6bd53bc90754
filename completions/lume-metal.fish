# fish completion for lume-metal (installed as share/fish/vendor_completions.d/lume-metal.fish).
# The flag lists follow `lume-metal help CMD` (tests/install/t-completion.sh checks them).

set -l cmds build verify probe deploy golden status rollback ledger key inventory host bench validate report config help
complete -c lume-metal -f
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -l version -d 'version, commit, data folder'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -l help -d 'the commands'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a build -d 'write the deterministic, checksummed payload'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a verify -d 'check a payload'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a probe -d 'run the probe stock and shimmed'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a deploy -d 'push, verify, install, validate, activate, record'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a golden -d 'clone, validate, stamp, push and record a golden image'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a status -d 'what is installed, drift, verdict'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a rollback -d 'previous release or stock'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a ledger -d 'show, export, merge, push, pull or prune the ledger'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a key -d 'the Ed25519 key pair that signs verdicts'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a inventory -d 'hosts as an Ansible inventory'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a host -d 'the paravirtual-graphics preference'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a bench -d 'llama-bench stock vs shim'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a validate -d 'llama-perplexity stock vs shim'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a report -d 'the evidence table'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a config -d 'the settings in force, and from where'
complete -c lume-metal -n "not __fish_seen_subcommand_from $cmds" -a help -d 'one command\'s flags'
complete -c lume-metal -n "__fish_seen_subcommand_from help" -a "$cmds"

# Connection flags: every command that reaches a VM or a Mac host.
set -l conn probe deploy golden status rollback host bench validate
complete -c lume-metal -n "__fish_seen_subcommand_from $conn inventory config" -s u -l user -x -d 'guest user'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn config" -s i -l identity -r -F -d 'private key file'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn config" -l password-file -r -F -d 'password file'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn config" -l known-hosts -r -F -d 'host keys'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn" -l accept-new -d 'add an unknown host key'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn inventory config" -l host -x -d 'a guest (user@addr[:port])'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn inventory" -l hosts -r -F -d 'Mac hosts file'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn config" -l lume -r -F -d 'the lume binary'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn" -l port -x -d 'SSH port of Lume VMs'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn" -l wait -x -d 'seconds to wait for a VM'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn" -l all -d 'every VM lume ls lists'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn" -l lume-default-password -d "also try Lume's default password"
complete -c lume-metal -n "__fish_seen_subcommand_from $conn" -l timeout -x -d 'per-VM limit'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn config" -l parallel -x -d 'VMs at once'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn ledger report config" -l state -r -a '(__fish_complete_directories)' -d 'ledger and caches'
complete -c lume-metal -n "__fish_seen_subcommand_from $conn build verify inventory ledger report config" -l json -d 'JSON output'
complete -c lume-metal -n "__fish_seen_subcommand_from probe host bench build verify inventory config" -l format -x -a "json text" -d 'output format'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy rollback validate golden" -l format -x -a "json text junit" -d 'output format (junit: a JUnit XML report)'
complete -c lume-metal -n "__fish_seen_subcommand_from status" -l format -x -a "json text junit openmetrics" -d 'output format (junit, or metrics)'
complete -c lume-metal -n "__fish_seen_subcommand_from status" -l textfile -r -a '(__fish_complete_directories)' -d "also write DIR/lume-metal.prom for node_exporter"
complete -c lume-metal -n "__fish_seen_subcommand_from probe deploy status rollback validate" -l order -x -a "finish input" -d 'the order of the lines'

# Payload flags.
complete -c lume-metal -n "__fish_seen_subcommand_from probe deploy golden rollback validate" -l payload -r -F -d 'a built payload'
complete -c lume-metal -n "__fish_seen_subcommand_from build probe deploy golden rollback validate" -l target -x -a 'macos linux-sim' -d 'target'
complete -c lume-metal -n "__fish_seen_subcommand_from build probe deploy golden rollback validate" -l profile -x -d 'capability profile'
complete -c lume-metal -n "__fish_seen_subcommand_from build probe deploy golden rollback bench validate report" -l workload -x -d 'workload'

# Validation flags: validate, deploy --validate-workload, and golden --model.
complete -c lume-metal -n "__fish_seen_subcommand_from bench deploy golden validate" -l model -r -F -d 'the model in the guest'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy golden validate" -l text -r -F -d 'the text both arms read'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy golden validate" -l chunks -x -d 'chunks of 512 tokens'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy golden validate" -l llama-perplexity -x -d 'llama-perplexity in the guest'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy" -l validate-workload -d 'validate an unvalidated image version first'

complete -c lume-metal -n "__fish_seen_subcommand_from build" -s o -l output -r -F -d 'output file'
complete -c lume-metal -n "__fish_seen_subcommand_from verify" -l sha256-file -r -F -d 'checksum file'
complete -c lume-metal -n "__fish_seen_subcommand_from verify" -F
complete -c lume-metal -n "__fish_seen_subcommand_from deploy golden status rollback ledger bench validate report" -l image -x -d 'image reference'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy" -l force -d 'validate and reinstall anyway'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy golden" -l dry-run -d 'print the plan, change nothing'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy" -l canary -x -d 'the first K VMs first'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy" -l batch -x -d 'wave size (N or P%)'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy" -l max-fail -x -d 'failure budget (N or P%)'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy" -l rollback-on-fail -d 'roll back when the run stops'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy" -l confirm-timeout -x -d 'seconds the guest waits for the shim in the workload and its readiness'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy" -l confirm-settle -x -d 'seconds the guest then watches the workload'
# golden's flags that take a value (NAME=description).
for fd in 'pull=pull IMAGE:TAG as the source first' 'pull-registry=where --pull finds its image' \
        'pull-organization=where --pull finds its image' 'registry=the registry to push to' \
        'organization=the organization to push to' 'additional-tags=another tag (repeatable)' \
        "build-vm=the clone's name"
    set -l f (string split -m1 = -- $fd)
    complete -c lume-metal -n "__fish_seen_subcommand_from golden" -l $f[1] -x -d $f[2]
end
complete -c lume-metal -n "__fish_seen_subcommand_from config" -l registry -x -d "golden's registry"
complete -c lume-metal -n "__fish_seen_subcommand_from config" -l organization -x -d "golden's organization"
complete -c lume-metal -n "__fish_seen_subcommand_from golden" -l keep -d 'keep the build VM, stopped'
complete -c lume-metal -n "__fish_seen_subcommand_from rollback" -l to -x -a 'previous none' -d 'where to'
complete -c lume-metal -n "__fish_seen_subcommand_from rollback" -l no-probe -d 'skip the stock probe'
complete -c lume-metal -n "__fish_seen_subcommand_from ledger" -l csv -d 'CSV'
complete -c lume-metal -n "__fish_seen_subcommand_from deploy status" -l verdicts -x -a 'registry local' -d 'where verdicts come from'
complete -c lume-metal -n "__fish_seen_subcommand_from key" -l json -d 'JSON output'
complete -c lume-metal -n "__fish_seen_subcommand_from key; and not __fish_seen_subcommand_from generate" -a generate -d 'write a key pair'
complete -c lume-metal -n "__fish_seen_subcommand_from ledger; and not __fish_seen_subcommand_from show export merge push pull prune" -a 'show export merge push pull prune'
complete -c lume-metal -n "__fish_seen_subcommand_from ledger" -l keep -x -d 'prune: each VM'"'"'s newest N records'
complete -c lume-metal -n "__fish_seen_subcommand_from ledger" -l dry-run -d 'prune: remove nothing, say what would go'
complete -c lume-metal -n "__fish_seen_subcommand_from inventory" -l list -d 'the whole inventory'
complete -c lume-metal -n "__fish_seen_subcommand_from host; and not __fish_seen_subcommand_from status enable disable" -a 'status enable disable'
complete -c lume-metal -n "__fish_seen_subcommand_from bench" -l llama-bench -x -d 'llama-bench in the guest'
complete -c lume-metal -n "__fish_seen_subcommand_from bench" -s p -x -d 'prompt tokens'
complete -c lume-metal -n "__fish_seen_subcommand_from bench" -s n -x -d 'generated tokens'
complete -c lume-metal -n "__fish_seen_subcommand_from bench" -s r -x -d 'repetitions'
complete -c lume-metal -n "__fish_seen_subcommand_from bench" -l threads -x -d 'threads'
complete -c lume-metal -n "__fish_seen_subcommand_from bench" -l host-baseline -d 'run on this host too'
complete -c lume-metal -n "__fish_seen_subcommand_from bench" -l host-llama-bench -r -F -d 'llama-bench here'
complete -c lume-metal -n "__fish_seen_subcommand_from bench" -l host-model -r -F -d 'the model here'
complete -c lume-metal -n "__fish_seen_subcommand_from bench" -l allow-different-model -d 'allow a different model'
complete -c lume-metal -n "__fish_seen_subcommand_from bench report" -l min-samples -x -d 'samples each test needs'
complete -c lume-metal -n "__fish_seen_subcommand_from bench golden validate" -l evidence -r -a '(__fish_complete_directories)' -d 'evidence directory'
complete -c lume-metal -n "__fish_seen_subcommand_from report" -l csv -d 'CSV'
complete -c lume-metal -n "__fish_seen_subcommand_from report" -l markdown -d 'Markdown table'
complete -c lume-metal -n "__fish_seen_subcommand_from report" -l ledger -d 'from the ledger'
complete -c lume-metal -n "__fish_seen_subcommand_from report" -l html -r -F -d 'also write the evidence as one HTML page'
complete -c lume-metal -n "__fish_seen_subcommand_from report" -a 'stock= shim= host='
complete -c lume-metal -n "__fish_seen_subcommand_from $cmds" -l help -d "this command's flags"
