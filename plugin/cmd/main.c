/* lume-metal: the command table, in the manner of git.c. */
#include <stdarg.h>
#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"

#define CONN_FLAGS \
	"\nConnection (every command that reaches a VM):\n" \
	"  -u, --user USER         guest user (default: user= of the config file, else the OpenSSH\n" \
	"                          configuration's User for a --host or --hosts address, else lume)\n" \
	"  -i, --identity FILE     private key file\n" \
	"      --password-file F   read the password from F (or $LUME_METAL_PASSWORD; never argv)\n" \
	"      --known-hosts FILE  host keys (default: known-hosts= of the config file, else the OpenSSH\n" \
	"                          configuration's UserKnownHostsFile, else ~/.ssh/known_hosts)\n" \
	"      --accept-new        add an unknown host key instead of refusing\n" \
	"      --host user@addr[:port]  a guest reached directly, without lume (repeatable)\n" \
	"      --lume PATH         the lume binary (default: lume on $PATH)\n" \
	"      --port N            SSH port of Lume VMs (default 22)\n" \
	"      --wait SECONDS      wait for a Lume VM to be running with SSH available\n" \
	"      --all               every VM that `lume ls` lists (none: says so on stderr, prints an empty\n" \
	"                          summary and exits 0, as with --hosts FILE whose hosts list none)\n" \
	"      --hosts FILE        Mac hosts (user@host[:port] lines, or JSON as manifests/hosts.example.json):\n" \
	"                          the VMs each one's `lume ls` lists (VM names filter them), reached through\n" \
	"                          that host's one SSH session (direct-tcpip, as ProxyJump); -u is the user of\n" \
	"                          lines without one, and of the guests\n" \
	"      --lume-default-password  also try Lume's default password (warns)\n" \
	"      --timeout SECONDS   per-VM limit for the whole operation (default 120); a wait for\n" \
	"                          one of the controller's handshake slots (8 per core) does not count\n" \
	"      --parallel N        VMs at once (default 32)\n" \
	"      --state DIR         ledger and caches (default $XDG_STATE_HOME/lume-metal)\n" \
	"      --json              machine-readable output: one JSON object per line (NDJSON),\n" \
	"                          one per VM as it finishes, then {\"summary\": ...}\n" \
	"      --format F          json (the same as --json) or text (the default), as Lume spells it;\n" \
	"                          junit (deploy, status, rollback, validate, golden): one JUnit XML\n" \
	"                          document at the end, a testcase per VM, for a CI's test report;\n" \
	"                          openmetrics (status): the Prometheus/OpenMetrics text format\n" \
	"\nThe config file ~/.config/lume-metal/config sets defaults for -u, -i, --password-file,\n" \
	"--known-hosts, --state, --parallel and --lume (see 'lume-metal help config').\n"

#define ORDER_FLAGS \
	"\nOutput order:\n" \
	"  --order finish|input  finish (the default): each VM's line as it finishes; input: in the\n" \
	"                        order the VMs were given (names, then --host; --all: lume ls's; --hosts:\n" \
	"                        the file's, each host's VMs in its lume ls order), each line as soon as\n" \
	"                        every VM before it is printed. Either way the JSON summary's \"order\"\n" \
	"                        lists the VMs in input order.\n"

#define PAYLOAD_FLAGS \
	"\nPayload:\n" \
	"  --payload FILE      a built payload (verified first); otherwise one is built for:\n" \
	"  --target T          macos (default) or linux-sim\n" \
	"  --profile ID        capability profile (default: the workload's)\n" \
	"  --workload ID       workload (default: llama-server)\n"

static const cli_command commands[] = {
	{"build", cmd_build, "write the deterministic, checksummed payload",
	    "build [--target macos|linux-sim] [--profile ID] [--workload ID] [-o FILE] [--json]\n\n"
	    "Writes one tar.gz holding MANIFEST.json, SHA256SUMS, the shim and probe for the target,\n"
	    "the profile, the rendered LaunchAgent and the guest scripts, and FILE.sha256 beside it.\n"
	    "Two builds of the same tree are byte-identical. Prints the payload's SHA-256.\n\n"
	    "  --target T     macos (default) or linux-sim (the Linux test build, simulated device)\n"
	    "  --profile ID   capability profile (default: the workload's)\n"
	    "  --workload ID  workload definition (default: llama-server)\n"
	    "  -o FILE        output (default: lume-metal-TARGET.tar.gz)\n"
	    "  --json         print the result as JSON\n", NULL},
	{"verify", cmd_verify, "check a payload against its manifest and checksum",
	    "verify FILE [--sha256-file F] [--json]\n\n"
	    "Reads FILE back and checks every entry against MANIFEST.json, and FILE against\n"
	    "FILE.sha256 (or F). Exit 2 names the first bad entry: a changed byte, a missing or extra\n"
	    "entry, an absolute path, .., a link, a device file, or an entry over 64 MiB.\n", NULL},
	{"probe", cmd_probe, "run the capability probe stock and shimmed, install nothing",
	    "probe VM... | --host user@addr[:port]... | --all [PAYLOAD FLAGS]\n\n"
	    "Uploads the payload to the guest's staging directory, runs its probe stock and through\n"
	    "run-with-shim with --expect in a scratch directory, prints both, and removes them all.\n"
	    PAYLOAD_FLAGS ORDER_FLAGS CONN_FLAGS, NULL},
	{"deploy", cmd_deploy, "push, verify, install, validate, activate, record",
	    "deploy VM... | --host user@addr[:port]... | --all [PAYLOAD FLAGS] [--image REF] [--force] [--dry-run]\n"
	    "       [--confirm-timeout SEC] [--confirm-settle SEC]\n\n"
	    "Reads the guest's facts (macOS version and build, hw.model, chip, image.json), consults\n"
	    "the ledger for that image version (a recorded failure is refused with exit 3 unless\n"
	    "--force), reports \"unchanged\" without sending a byte when the payload is already current,\n"
	    "else uploads it, verifies and unpacks it, probes stock and shimmed, and only on a pass\n"
	    "switches current and bootstraps the LaunchAgent. The verdict is recorded per image version.\n"
	    PAYLOAD_FLAGS
	    "  --image REF         the image reference for the ledger (default: the guest's image.json)\n"
	    "  --force             validate an image version recorded as failing, and reinstall a\n"
	    "                      payload that is already current (repairs drift)\n"
	    "  --dry-run           print the plan and change nothing\n"
	    "  --validate-workload when the workload requires validation (\"requireValidation\") and this\n"
	    "                      image version has no passing validate record, run `validate` on this VM\n"
	    "                      first (with --model PATH, and --text, --chunks, --llama-perplexity as\n"
	    "                      there; --timeout then defaults to 3600); without it such a VM is refused\n"
	    "                      (exit 3) with the command to run. Other VMs of a validated version only\n"
	    "                      read the ledger.\n"
	    "  --verdicts registry|local  registry: a VM whose image version has no verdict in this ledger\n"
	    "                      gets the one attached to its image in the registry (the reference from\n"
	    "                      --image or the guest's image.json), signed by a trusted-key, recorded\n"
	    "                      here first; one lookup per image version (default: verdicts= of the\n"
	    "                      config file, else local; docs/verdicts.md)\n"
	    "  --confirm-timeout SEC  how long the guest waits, after the bootstrap, for the process\n"
	    "                      launchd runs to have the shim active and, for a workload with a\n"
	    "                      readiness URL, to answer 200 there (1..3600; default: the config\n"
	    "                      file's confirm-timeout, else the guest's LUME_METAL_CONFIRM_TIMEOUT,\n"
	    "                      else 60)\n"
	    "  --confirm-settle SEC   how long it then watches that process stay up (0..600; default:\n"
	    "                      confirm-settle, else LUME_METAL_CONFIRM_SETTLE, else 5). Both must fit\n"
	    "                      in --timeout. A workload that exits after its shim was active, or is\n"
	    "                      never ready, fails this VM alone; a shim that never shows active\n"
	    "                      fails the image version.\n"
	    "\nStaged rollout (like Ansible's serial and max_fail_percentage):\n"
	    "  --canary K          deploy to the first K VMs; go on only if all of them pass\n"
	    "  --batch N|P%        then waves of N VMs (or P% of all); default one wave\n"
	    "  --max-fail N|P%     failure budget: more failures than this and no further VM is started\n"
	    "                      (running ones finish); checked before each VM, not only per wave\n"
	    "  --rollback-on-fail  when the run stops, VMs it deployed go back to their previous release\n"
	    ORDER_FLAGS CONN_FLAGS, NULL},
	{"golden", cmd_golden, "clone, validate, stamp, push and record a golden image",
	    "golden SOURCE IMAGE:TAG | --pull BASE:TAG [NAME] IMAGE:TAG [--registry R] [--organization O]\n"
	    "       [--additional-tags TAG]... [--build-vm NAME] [--keep] [--dry-run] [PAYLOAD FLAGS]\n\n"
	    "Builds on a `lume clone` of SOURCE (a stopped local VM, never changed; --pull pulls BASE:TAG\n"
	    "first, as NAME, or as Lume's BASE_TAG, or BASE_TAG-2, -3, ... when a VM has that name): runs it (lume run, detached and without a display), waits for SSH,\n"
	    "deploys the payload with full validation (as deploy --force), stamps\n"
	    "~/Library/Application Support/lume-metal/image.json in the guest, stops it, pushes it\n"
	    "under a tag only this run knows, IMAGE:golden-HEX (lume push, credentials from\n"
	    "GITHUB_USERNAME/GITHUB_TOKEN or GHCR_*), reads that manifest's digest from its bytes,\n"
	    "points IMAGE:TAG and the additional tags at it and reads them back (another digest there:\n"
	    "re-tagged by someone else, exit 1, nothing recorded), records one ledger record of kind\n"
	    "golden under that digest, and deletes the build VM. A failed validation pushes nothing (its verdict is\n"
	    "recorded under the base image); the build VM is then stopped and deleted, or kept with\n"
	    "--keep. Progress per step on stderr; --json prints one object.\n\n"
	    "  --registry R        as lume push (default ghcr.io); --organization O (default trycua)\n"
	    "  --additional-tags T more tags pointed at the pushed manifest (repeatable)\n"
	    "  --pull-registry R, --pull-organization O   where --pull finds BASE:TAG\n"
	    "  --build-vm NAME     the clone's name (default lume-metal-golden-PID)\n"
	    "  --keep              keep the build VM (stopped) after the build\n"
	    "  --dry-run           print every step's command and run none\n"
	    "  --model PATH        also validate the workload (as lume-metal validate: llama-perplexity stock\n"
	    "                      and shimmed, KL divergence) on the build VM; a fail pushes nothing. Required\n"
	    "                      when the workload has requireValidation. --text, --chunks,\n"
	    "                      --llama-perplexity and --evidence DIR as for validate\n"
	    "  --image REF         the base image's reference for the deploy's ledger record\n"
	    "  --wait SECONDS      the wait for SSH (default 300)\n"
	    PAYLOAD_FLAGS CONN_FLAGS, NULL},
	{"status", cmd_status, "what is installed, service state, drift, ledger verdict",
	    "status VM... | --host user@addr[:port]... | --all [--image REF] [--verdicts registry|local]"
	    " [--textfile DIR]\n\n"
	    "Prints each VM's releases, current and previous, the service state, drift (files that no\n"
	    "longer match their checksums, an edited LaunchAgent) and the ledger's verdict for its image\n"
	    "version. State ok or drift; exit 1 when any VM has drift or cannot be read.\n"
	    "  --verdicts registry|local  as deploy's: with registry, a version this ledger has no verdict\n"
	    "                      for is looked up in its image's registry (trusted-key), and recorded\n"
	    "  --textfile DIR      also write the metrics (as --format openmetrics prints them) to\n"
	    "                      DIR/lume-metal.prom for node_exporter's textfile collector: a temporary\n"
	    "                      file in DIR renamed over it; stdout keeps its format\n" ORDER_FLAGS CONN_FLAGS, NULL},
	{"rollback", cmd_rollback, "return one VM or the fleet to the previous release or to stock",
	    "rollback VM... | --host user@addr[:port]... | --all [--to previous|none] [--image REF]\n"
	    "         [--target T | --payload FILE | --no-probe]\n\n"
	    "previous: the previous release becomes current and its LaunchAgent is bootstrapped.\n"
	    "none: the service is booted out and everything lume-metal installed is removed; then the\n"
	    "probe of a payload for --target (default macos) or --payload runs in a scratch directory to\n"
	    "show the stock answers (--no-probe skips it). The rollback is recorded in the ledger.\n"
	    ORDER_FLAGS CONN_FLAGS, NULL},
	{"ledger", cmd_ledger, "show, export, merge, push, pull or prune the results per image version",
	    "ledger [show|export] [--image REF] [--json|--csv] [--state DIR]\n"
	    "       ledger merge [--state DIR] [--json] SRC...\n"
	    "       ledger push|pull [--state DIR] [--json] IMAGE\n"
	    "       ledger prune [--keep N] [--dry-run] [--state DIR] [--json]\n\n"
	    "The ledger is the SQLite database STATE/ledger.db; the JSON documents an older lume-metal kept\n"
	    "in STATE/ledger/ are imported on first use and kept there, renamed *.json.migrated.\n\n"
	    "show (default) prints every image version's records; export prints CSV with the evidence\n"
	    "results.csv columns plus the key fields. --json prints every document.\n\n"
	    "merge adds the records of ledgers fetched from other machines (SRC: a file of `ledger show\n"
	    "--json` or one document, a ledger.db, a state directory, or a directory of documents) to\n"
	    "this one: each record not already there goes to its image version, so merging twice adds\n"
	    "nothing. Every SRC is checked first; one that is not a ledger document is exit 2, naming it,\n"
	    "and nothing is written. Prints the records merged, the documents written and the records\n"
	    "already present (--json: {\"merged\", \"documents\", \"present\", \"sources\"}).\n\n"
	    "prune removes what neither the gate nor a report needs, and says what per image version and\n"
	    "kind (--json: {\"keep\", \"dryRun\", \"removed\", \"kept\", \"versions\"}). It keeps every record\n"
	    "that gates (validate, golden, a failing deploy whose cause is not the workload), the newest\n"
	    "record of each kind and payload, each VM's newest N records and each image version's newest\n"
	    "N records of clones (observations, and deploy records reconciled from a clone's install.json).\n"
	    "  --keep N          N (1..1000000; default: ledger-keep of the config file, else 20)\n"
	    "  --dry-run         remove nothing: say what would go\n\n"
	    "push signs this ledger's records of the image version IMAGE names (REGISTRY/REPO:TAG or\n"
	    "REGISTRY/REPO@sha256:HEX) with signing-key= of the config file and attaches them in its\n"
	    "registry as a Sigstore bundle (artifactType application/vnd.dev.sigstore.bundle.v0.3+json,\n"
	    "a DSSE envelope over an in-toto Statement, as cosign verify-attestation finds them) whose\n"
	    "subject is the image manifest; golden does it after a passing build. pull reads the verdicts\n"
	    "attached to IMAGE (bundles, and the plain envelopes of earlier versions), shows each as\n"
	    "trusted, untrusted (naming its signer), unsigned or refused (why), and records the trusted\n"
	    "ones here, marked \"imported\"; only those are ever used by a gate.\n"
	    "Exit 0 with a trusted verdict, 3 with none trusted, 1 with none attached (docs/verdicts.md).\n", NULL},
	{"key", cmd_key, "make the Ed25519 key pair that signs verdicts",
	    "key generate [PATH] [--json]\n\n"
	    "Writes a new Ed25519 key pair for signing the verdicts `golden` and `ledger push` attach to\n"
	    "an image in its registry: PATH, the private key (PEM PKCS#8, mode 0600), and PATH.pub, the\n"
	    "public key (PEM SubjectPublicKeyInfo); `openssl pkey` reads both. Neither file may exist: a\n"
	    "key is never overwritten, and a symlink in its place is refused. Default PATH:\n"
	    "$XDG_CONFIG_HOME/lume-metal/verdict-key (~/.config/lume-metal/verdict-key). Prints the key's\n"
	    "id (sha256: and the SHA-256 of the raw public key), the id every verdict names its signer by,\n"
	    "and its fingerprint (SHA256:..., as ssh-keygen -l prints it: its signatures' keyid). An ECDSA\n"
	    "P-256 key (a PKCS#8 file of openssl genpkey; a cosign.pub to trust) is used as it is.\n"
	    "Name the private key as signing-key= in the config file of the controller that signs (a CI\n"
	    "runner), and the public one as trusted-key= on every controller that deploys on its verdicts\n"
	    "(docs/verdicts.md).\n\n"
	    "  --json   one object: {\"private\", \"public\", \"keyid\", \"fingerprint\"}\n", NULL},
	{"inventory", cmd_inventory, "the --hosts file as an Ansible dynamic inventory",
	    "inventory --hosts FILE [--list | --host NAME] [-u USER]\n\n"
	    "Prints the Mac hosts of FILE (user@host[:port] lines or a JSON inventory, as deploy --hosts\n"
	    "reads it) as the JSON Ansible wants from an inventory script. --list (the default): the group\n"
	    "mac_hosts and, under _meta.hostvars, each host's ansible_host, ansible_user and ansible_port.\n"
	    "--host NAME: that host's variables; a name FILE does not list is exit 2.\n"
	    "scripts/ansible/inventory runs it for `ansible -i`.\n\n"
	    "  --hosts FILE      the hosts file; a bad line is exit 2, naming the file and line\n"
	    "  -u, --user USER   the user of hosts that name none (default: user= of the config file,\n"
	    "                    else lume)\n", NULL},
	{"host", cmd_host, "the host's paravirtual-graphics preference",
	    "host [status|enable|disable] [--json] [--state DIR] [--lume PATH]\n"
	    "       host status --hosts FILE [connection flags] [--json]\n\n"
	    "Reads, sets or restores com.apple.gpusw.ParavirtualizedGraphics\n"
	    "ForceUnrestrictedDeviceFeatureLevel with defaults(1) for this user. enable records the value\n"
	    "it replaces; disable restores it. Both list the running VMs that must be restarted.\n\n"
	    "With --hosts FILE, status asks every Mac host of FILE over SSH (--parallel at once): the\n"
	    "preference there and the VM slots in use (running VMs of the 2 a Mac may run). One line per\n"
	    "host (--json: {\"host\", \"address\", \"state\", \"value\", \"slotsUsed\", \"slots\", \"running\",\n"
	    "\"vms\"}, or \"state\" unreachable, auth-failed, hostkey-mismatch, timeout or failed with\n"
	    "\"message\"), then a summary. Exit 1 when a host gave no answer. enable and disable run on the\n"
	    "Mac itself (run them there, e.g. from Ansible).\n"
	    CONN_FLAGS, NULL},
	{"bench", cmd_bench, "llama-bench stock vs shim (vs bare metal) in a guest, as evidence",
	    "bench VM | --host user@addr[:port] --model PATH [--llama-bench PATH] [-p 512 -n 128 -r 10]\n"
	    "      [--threads N] [--host-baseline [--host-llama-bench PATH] [--host-model PATH]]\n"
	    "      [--allow-different-model] [--min-samples N] [--evidence DIR] [--workload NAME] [--image REF]\n\n"
	    "Runs llama-bench -o json in the guest twice with identical arguments, stock and through the\n"
	    "installed release's run-with-shim (deploy first), and with --host-baseline on this host too.\n"
	    "Hashes llama-bench and the model on each side first (a guest model that differs from the\n"
	    "host's is refused unless --allow-different-model). Figures are medians of samples_ts; the\n"
	    "stderr shows which Metal path each arm took, and a shim arm on the stock path is reported as\n"
	    "shim-not-effective (exit 1). Writes one ledger record and, with --evidence, a new directory:\n"
	    "raw JSON and stderr of every arm, results.csv, metadata.md, SHA256SUMS. --timeout defaults\n"
	    "to 3600 here.\n" CONN_FLAGS, NULL},
	{"validate", cmd_validate, "llama-perplexity stock vs shim in a guest: the kernels compute the same",
	    "validate VM | --host user@addr[:port] | --hosts FILE [VM...] --model PATH [--text FILE] [--chunks N]\n"
	    "      [--llama-perplexity PATH] [--evidence DIR] [--image REF] [PAYLOAD FLAGS]\n\n"
	    "Proves that the kernels the shim unlocks compute what the stock ones do, with llama.cpp's own\n"
	    "tool. Uploads the payload and the text to a scratch directory in the guest and runs there,\n"
	    "with the same model and text:\n"
	    "  1. stock: llama-perplexity -m M -f TEXT -c 512 --chunks N (saves its logits)\n"
	    "  2. shim:  run-with-shim llama-perplexity -m M -c 512 (compares with them)\n"
	    "  both with --kl-divergence-base B; the shim arm adds --kl-divergence;\n"
	    "and reads Mean PPL(Q)/PPL(base), Mean KLD, 99.9% KLD and Same top p, each arm's\n"
	    "ggml_metal_device_init lines (ggml_metal_init before about b6500) and its own error lines:\n"
	    "llama-perplexity exits 0 after them (\"you need at least N tokens\": the text must hold 2 x\n"
	    "context tokens; one under 2 x context bytes is refused before anything runs).\n"
	    "Pass: both arms exit 0 without an error line, the shim arm took the simdgroup paths and\n"
	    "the stock arm did not, mean KLD <= 0.01, same top token >= 97%, PPL ratio within 0.01 of 1\n"
	    "(the workload manifest's \"validation\" object sets them). A pass or a fail is recorded per\n"
	    "image version (kind validate: figures, model, text and llama.cpp build); a workload with\n"
	    "\"requireValidation\" deploys only to a version whose last validate record passed. Exit 0\n"
	    "validated, 1 validation failed or could not run, 2 bad input (no model or llama-perplexity in\n"
	    "the guest, a text too short). Progress per arm goes to stderr.\n\n"
	    "With --hosts FILE: every VM the hosts list (VM names filter them), as deploy reaches them.\n"
	    "One VM of each image version runs the two arms and records the verdict once; a version is\n"
	    "the image digest and the Mac's chip, model and build, so Macs that differ validate apart.\n"
	    "The other VMs of that version wait for it and report its verdict: validated or\n"
	    "validation-failed, the message and \"validatedBy\" naming the VM that ran it (or skipped when\n"
	    "that run recorded none: failed, timeout). One line per VM, then a summary, as deploy's; exit 0\n"
	    "when every VM is validated, 1 otherwise. --evidence DIR then holds one directory per VM that\n"
	    "ran (HOST_VM).\n\n"
	    "  --model PATH            the model's path in the guest (required)\n"
	    "  --text FILE             a text on this host (default: the workload's, under manifests/)\n"
	    "  --chunks N              chunks of 512 tokens (default: the workload's, 8); fewer than 100\n"
	    "                          positions print no statistics, which is an error, not a pass\n"
	    "  --llama-perplexity P    its name or path in the guest (default llama-perplexity, looked up in\n"
	    "                          /opt/homebrew/bin and /usr/local/bin first: a non-login SSH shell's\n"
	    "                          PATH on macOS has neither)\n"
	    "  --evidence DIR          a new directory: each arm's stdout and stderr (their last MiB),\n"
	    "                          record.json and SHA256SUMS\n"
	    "  --image REF             the image reference for the ledger (default: the guest's image.json)\n"
	    "  --timeout SECONDS       defaults to 3600 here: a large model's stock arm runs on the slow\n"
	    "                          kernels, about ten times the shim arm's time\n"
	    PAYLOAD_FLAGS ORDER_FLAGS CONN_FLAGS, NULL},
	{"report", cmd_report, "the evidence table from llama-bench JSON or the ledger",
	    "report stock=FILE shim=FILE [host=FILE] [--workload NAME] [--csv|--markdown|--json] [--min-samples N]"
	    " [--html FILE]\n"
	    "       report --ledger [--image REF] [--state DIR] [--csv|--markdown|--json] [--html FILE]\n\n"
	    "Compares llama-bench -o json runs test by test (pp<n_prompt>, tg<n_gen>) on the medians of\n"
	    "samples_ts, with min and max: guest_ratio = shim/stock, shim_to_host_percent = 100*shim/host.\n"
	    "FILE.stderr beside each FILE.json is read for what ggml_metal_device_init (or, before about\n"
	    "b6500, ggml_metal_init) chose (GPU name,\n"
	    "highest Apple family, simdgroup reduction and matrix mul., bfloat, residency sets); a shim\n"
	    "arm on the stock path (simdgroup matrix mul. = false) is reported as \"shim not effective\",\n"
	    "exit 1. Input that does not parse, a row both pp and tg, no pp or no tg test, a bad or empty\n"
	    "samples_ts, too few samples, or no Metal device in gpu_info is exit 2, naming the file.\n\n"
	    "  --workload NAME   the workload label (default: the model file and model_type of the JSON)\n"
	    "  --csv             the columns of the published results.csv, with its rounding\n"
	    "  --markdown        the evidence README table\n"
	    "  --json            one object: arms with paths and Metal lines, per-test figures, ratios\n"
	    "  --min-samples N   samples each test needs (default 3)\n"
	    "  --ledger          every ledger record of kind bench, per image version side by side\n"
	    "  --image REF       with --ledger: that image only\n"
	    "  --state DIR       ledger directory (default $XDG_STATE_HOME/lume-metal)\n"
	    "  --html FILE       also write the evidence as one HTML page: per image version and Mac, bars of\n"
	    "                    stock, shim and bare metal per test, the speedup, the validation against\n"
	    "                    its thresholds, the verdict; inline CSS and SVG, no script, nothing fetched\n", NULL},
	{"config", cmd_config, "the settings in force and where each one comes from",
	    "config [--host ALIAS] [--format json|text] [SETTING FLAGS]\n\n"
	    "Prints each setting the config file may hold, its value in force and its source: flag,\n"
	    "config:FILE:LINE, ssh-config (the OpenSSH configuration, with --host) or default. The order,\n"
	    "first wins: the flags, the config file, `ssh -G` for a --host or --hosts address (User,\n"
	    "IdentityFile, UserKnownHostsFile), the built-in defaults.\n\n"
	    "The config file is $XDG_CONFIG_HOME/lume-metal/config (default ~/.config/lume-metal/config):\n"
	    "one KEY=VALUE a line, blank lines and # comments allowed, ~/ in a path is $HOME/. Its keys:\n"
	    "user, identity, password-file, known-hosts, state, parallel (1-1024), lume, registry and\n"
	    "organization (golden's), verdicts (local or registry: deploy's and status's --verdicts),\n"
	    "signing-key (the private key golden and ledger push sign verdicts with), trusted-key\n"
	    "(public key files, comma-separated: whose verdicts a gate uses; every key of a file, at most\n"
	    "32, nothing else in it, and no file or folder up to $HOME others may write; docs/verdicts.md),\n"
	    "confirm-timeout (1-3600) and confirm-settle (0-600; deploy's), ledger-keep (1-1000000:\n"
	    "each record a run appends keeps what `ledger prune --keep N` would, for its VM; unset: all).\n"
	    "A bad line (an unknown key, no =, a bad number, a key twice) stops\n"
	    "every command that reads it with exit 2, naming FILE:LINE, before anything runs. An identity\n"
	    "or password file it names must be one only you can read, as on the command line.\n\n"
	    "  --host ALIAS          also show what the OpenSSH configuration says of ALIAS\n"
	    "  --json                one object: {\"file\", \"fileExists\", \"settings\": {KEY: {\"value\",\n"
	    "                        \"source\"}}}, and \"host\" with --host\n"
	    "  --format json|text    the same as --json, or text (the default)\n"
	    "\nSetting flags (shown with source flag; each as the other commands take it):\n"
	    "  -u, --user USER       the guest user\n"
	    "  -i, --identity FILE   the private key\n"
	    "  --password-file F     the password file\n"
	    "  --known-hosts FILE    the host keys\n"
	    "  --state DIR           ledger and caches\n"
	    "  --parallel N          VMs at once\n"
	    "  --lume PATH           the lume binary\n"
	    "  --registry R          golden's registry\n"
	    "  --organization O      golden's organization\n", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

const cli_command *
cli_find(const char *name)
{
	for (const cli_command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* Examples, per command, after its usage. */
static const struct {
	const char *name, *text;
} examples[] = {
	{"build", "  lume-metal build\n"
	    "  lume-metal build --target linux-sim --profile m1-ultra-tahoe-26.5 -o sim.tar.gz --json\n"},
	{"verify", "  lume-metal verify lume-metal-macos.tar.gz\n"
	    "  lume-metal verify payload.tgz --sha256-file payload.tgz.sha256 --format json\n"},
	{"probe", "  lume-metal probe tahoe-1\n"
	    "  lume-metal probe --host lume@192.168.64.5 --payload lume-metal-macos.tar.gz --json\n"},
	{"deploy", "  lume-metal deploy tahoe-1 --accept-new --validate-workload --model ~/m.gguf\n"
	    "  lume-metal deploy --all --dry-run\n"
	    "  lume-metal deploy --hosts macs.txt --canary 1 --batch 25% --max-fail 5% --rollback-on-fail\n"
	    "  lume-metal deploy --all --json | jq -c 'select(.state != \"unchanged\")'\n"
	    "  lume-metal deploy --hosts macs.txt --format junit > deploy-report.xml\n"},
	{"status", "  lume-metal status tahoe-1\n"
	    "  lume-metal status --hosts macs.txt --format json\n"
	    "  lume-metal status --all --order input > before.txt\n"
	    "  lume-metal status --all --textfile /var/lib/prometheus/node-exporter\n"},
	{"rollback", "  lume-metal rollback tahoe-1\n"
	    "  lume-metal rollback --all --to none --no-probe\n"},
	{"ledger", "  lume-metal ledger show --image ghcr.io/trycua/macos-tahoe:26.5\n"
	    "  lume-metal ledger export > results.csv\n"
	    "  lume-metal ledger pull ghcr.io/my-org/macos-tahoe-shim:26.5\n"
	    "  lume-metal ledger merge fetched/mac-1 fetched/mac-2\n"
	    "  lume-metal ledger prune --keep 50 --dry-run\n"},
	{"key", "  lume-metal key generate\n"
	    "  lume-metal key generate ~/ci/verdict-key --json\n"},
	{"inventory", "  lume-metal inventory --hosts macs.txt --list\n"
	    "  ansible -i scripts/ansible/inventory mac_hosts -m ping\n"},
	{"host", "  lume-metal host status\n"
	    "  lume-metal host enable\n"
	    "  lume-metal host status --hosts macs.txt --json\n"},
	{"bench", "  lume-metal bench tahoe-1 --model ~/models/tinyllama.gguf --host-baseline --evidence ev/\n"},
	{"validate", "  lume-metal validate tahoe-1 --model ~/models/tinyllama.gguf\n"
	    "  lume-metal validate tahoe-1 --model ~/m.gguf --chunks 16 --evidence ev/ --json\n"
	    "  lume-metal validate --hosts macs.txt --model ~/m.gguf --order input\n"},
	{"golden", "  lume-metal golden tahoe-base macos-tahoe-shim:26.5 --model ~/m.gguf --dry-run\n"
	    "  lume-metal golden --pull macos-tahoe-cua:latest shim:26.5 --model ~/m.gguf\n"},
	{"config", "  lume-metal config\n"
	    "  lume-metal config --host tahoe-1 --format json\n"},
	{"report", "  lume-metal report stock=stock.json shim=shim.json host=host.json --markdown\n"
	    "  lume-metal report --ledger --csv\n"
	    "  lume-metal report --ledger --html evidence.html\n"},
};

/* The hanging indentation of a line: under the description column of a flag row ("  --flag ARG
 * text"), else its own indentation; *lead gets its own. */
static size_t
hang_of(const char *line, size_t len, size_t *lead)
{
	size_t l = 0;

	while (l < len && line[l] == ' ')
		l++;
	*lead = l;
	if (l < len && line[l] == '-')
		for (size_t k = l; k + 2 < len; k++)
			if (line[k] == ' ' && line[k + 1] == ' ' && line[k + 2] != ' ') {
				while (line[k] == ' ')
					k++;
				return k <= 40 ? k : l;
			}
	return l;
}

/* The texts were wrapped by hand at ~95 columns: a prose line (no indentation) followed by
 * another, and a flag row followed by its continuation (indented to its description column),
 * are joined into one line for wrap80 to wrap again. */
static void
reflow(lm_buf *out, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text), lead, hang = hang_of(text, len, &lead);

		lm_buf_add(out, text, len);
		text += len + (nl != NULL);
		while (nl && len > 0 && *text && *text != '\n') {
			size_t nlen, nlead;

			nl = strchr(text, '\n');
			nlen = nl ? (size_t)(nl - text) : strlen(text);
			hang_of(text, nlen, &nlead);
			if (!((lead == 0 && nlead == 0) || (hang > lead && nlead == hang && text[nlead] != '-')))
				break;
			lm_buf_add(out, " ", 1);
			lm_buf_add(out, text + nlead, nlen - nlead);
			text += nlen + (nl != NULL);
		}
		if (nl)
			lm_buf_add(out, "\n", 1);
	}
}

/* Writes text to stdout with every line wrapped at 80 columns, at a space: a continued line
 * lines up under the description column of a flag row ("  --flag ARG   text"), else under its
 * own indentation, and under the arguments for the synopsis (first) line. */
static void
wrap80(const char *text, size_t first_indent)
{
	for (int first = 1; *text; first = 0) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text), lead, hang = hang_of(text, len, &lead), col = 0;

		if (first)
			hang = first_indent;
		while (col + len > 80) {
			size_t cut = 80 - col; /* text[cut] is the space to break at */

			while (cut > 0 && text[cut] != ' ')
				cut--;
			if (cut == 0 || (col == 0 && cut <= lead)) /* a word longer than the line: left whole */
				break;
			fwrite(text, 1, cut, stdout);
			printf("\n%*s", (int)hang, "");
			while (cut < len && text[cut] == ' ')
				cut++;
			text += cut;
			len -= cut;
			col = hang;
		}
		fwrite(text, 1, len, stdout);
		putchar('\n');
		text += len + (nl != NULL);
	}
}

int
cli_help(const char *name)
{
	const cli_command *c = cli_find(name);
	lm_buf b = {0}, r = {0};

	if (c == NULL)
		return cli_error(EXIT_USAGE, "help: '%s' is not a lume-metal command; see 'lume-metal --help'", name);
	lm_buf_addf(&b, "usage: lume-metal %s", c->usage);
	if (c->issue)
		lm_buf_addf(&b, "\n(not built yet: arrives with issue %s)\n", c->issue);
	for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
		if (strcmp(examples[i].name, name) == 0)
			lm_buf_addf(&b, "\nExamples:\n%s", examples[i].text);
	if (b.data != NULL && (reflow(&r, b.data), r.data != NULL)) {
		if (r.len > 0 && r.data[r.len - 1] == '\n')
			r.data[--r.len] = '\0';
		wrap80(r.data, strlen("usage: lume-metal ") + strlen(name) + 1);
	}
	lm_buf_free(&b);
	lm_buf_free(&r);
	return EXIT_OK;
}

static int
usage(FILE *f)
{
	fprintf(f, "usage: lume-metal [--version] [--help] COMMAND [ARGS]\n\n"
	    "Makes the Metal capability shim safe to run across a fleet of Lume guests.\n\n");
	for (const cli_command *c = commands; c->name; c++)
		fprintf(f, "  %-9s %s%s\n", c->name, c->summary, c->issue ? " (not built yet)" : "");
	fprintf(f, "\n'lume-metal help COMMAND' shows one command's flags.\n"
	    "Exit codes: 0 all good, 1 some VM failed, 2 usage or input error, 3 refused by a\n"
	    "gate, 130 interrupted (Ctrl-C once: running VMs finish and are recorded; twice:\n"
	    "they are abandoned).\n"
	    "Data (guest scripts, manifests, shim): $LUME_METAL_DATADIR, else the installed\n"
	    "PREFIX/share/lume-metal, else the source tree; 'lume-metal --version' shows which.\n");
	return f == stdout ? EXIT_OK : EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	const cli_command *c;
	int too_long, rc = ops_process_init(&too_long);

	if (too_long)
		fprintf(stderr, "lume-metal: warning: $LUME_METAL_PASSWORD is too long (1023 bytes at most); not using it\n");
	if (rc != LM_OK)
		return cli_error(EXIT_SOMEFAIL, "libssh2_init failed");
	/* A guest or relay socket that closes under a write is an error to report, not a death. */
	signal(SIGPIPE, SIG_IGN);
#ifdef M_ARENA_MAX
	/* glibc gives each pool thread its own arena (~220 KB resident each); the pool's threads
	 * wait on the network, not on malloc, so two arenas do: 256 guests at once fit in 64 MB. */
	mallopt(M_ARENA_MAX, 2);
#endif

	if (argc < 2)
		return usage(stderr);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return usage(stdout);
	if (strcmp(argv[1], "--version") == 0)
		return cli_version();
	if (strcmp(argv[1], "help") == 0)
		return argc > 2 ? cli_help(argv[2]) : usage(stdout);
	if (argv[1][0] == '-')
		return cli_error(EXIT_USAGE, "unknown flag '%s'; see 'lume-metal --help'", argv[1]);
	if ((c = cli_find(argv[1])) == NULL)
		return cli_error(EXIT_USAGE, "'%s' is not a lume-metal command; see 'lume-metal --help'", argv[1]);
	/* CMD --help and CMD -h are help CMD. */
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return cli_help(c->name);
	if (c->fn == NULL)
		return cli_error(EXIT_USAGE, "%s: not built yet (arrives with issue %s)", c->name, c->issue);
	return c->fn(argc - 1, argv + 1);
}
