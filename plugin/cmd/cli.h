/* cli: the command table's shared pieces. Only main.c and cmd_*.c print or exit. */
#ifndef LM_CLI_H
#define LM_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "core/util.h"
#include "ops/deploy.h"
#include "ops/payloads.h"
#include "ops/request.h"

/* Exit codes of the design. */
enum { EXIT_OK = 0, EXIT_SOMEFAIL = 1, EXIT_USAGE = 2, EXIT_REFUSED = 3 };

/* A command, defined in its cmd_<name>.c beside its option table (in the way each git builtin
 * keeps its own usage and OPT_* rows); main.c lists them. */
typedef struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage;    /* the full help text after "usage: lume-metal " */
	const char *examples; /* the lines after "Examples:" */
	const struct option *options; /* its option table (name, argument, id), ending in a zero row;
	                               * every row is named in usage */
	const char *issue;    /* set while the command is not built yet */
} cli_command;

/* The commands in --help's order, ending in NULL (main.c). */
extern const cli_command *const cli_commands[];
extern const cli_command cli_cmd_build, cli_cmd_verify, cli_cmd_probe, cli_cmd_deploy, cli_cmd_golden,
    cli_cmd_status, cli_cmd_rollback, cli_cmd_ledger, cli_cmd_key, cli_cmd_inventory, cli_cmd_host, cli_cmd_bench,
    cli_cmd_validate, cli_cmd_report, cli_cmd_config;

const cli_command *cli_find(const char *name);

/* The ids cli_getopt returns for the long flags without a short letter, by name (a command's own
 * flags take theirs from CLI_OPT_OWN up). */
enum {
	CLI_OPT_PASSWORD_FILE = 1001, CLI_OPT_KNOWN_HOSTS, CLI_OPT_ACCEPT_NEW, CLI_OPT_HOST, CLI_OPT_TIMEOUT,
	CLI_OPT_PARALLEL, CLI_OPT_STATE, CLI_OPT_JSON, CLI_OPT_LUME, CLI_OPT_WAIT, CLI_OPT_ALL,
	CLI_OPT_LUME_DEFAULT_PASSWORD, CLI_OPT_PORT, CLI_OPT_HOSTS, CLI_OPT_FORMAT, CLI_OPT_ORDER,
	CLI_OPT_TARGET = 1020, CLI_OPT_PROFILE, CLI_OPT_WORKLOAD, CLI_OPT_PAYLOAD,
	CLI_OPT_CANARY = 1030, CLI_OPT_BATCH, CLI_OPT_MAX_FAIL, CLI_OPT_ROLLBACK_ON_FAIL,
	CLI_OPT_MODEL = 1040, CLI_OPT_TEXT, CLI_OPT_CHUNKS, CLI_OPT_LLAMA_PERPLEXITY, CLI_OPT_VALIDATE_WORKLOAD,
	CLI_OPT_VERDICTS = 1050,
	CLI_OPT_OWN = 1100,
};

/* Terminal-safe output (cli_term.c). Every string that came from a guest, a Mac host, the ledger
 * or a file goes to the terminal through these, never through printf's own %s, escaped by the
 * rule of core/escape.h: printable ASCII and well-formed UTF-8 pass; \n, \r and \t become those
 * two characters; every other control, the bidi overrides and bytes that are not UTF-8 become
 * \xNN, one per byte (ESC is \x1b). */

/* printf to stdout where every %s and %c argument is escaped; width and precision work as in
 * printf (precision counts bytes of the argument, width bytes of the escaped text). The format
 * itself is trusted and written as it is, control characters and all. Supports the conversions
 * of C11 printf except %n; returns the bytes written, or -1. */
int cli_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same, appended to b (a table built before it is printed); 0, or -1. */
int cli_bprintf(lm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes s escaped to f; with keep_nl, newlines pass (a rendered table of several lines, whose
 * fields must hold none). Returns the bytes written, or -1. */
int cli_text(FILE *f, const char *s, int keep_nl);

/* Appends s escaped to out; 0, or -1 when out of memory. */
int cli_escape(lm_buf *out, const char *s);
/* The same for n bytes of s, newlines kept with keep_nl (render.h's documents start here). */
int cli_escape_n(lm_buf *out, const char *s, size_t n, int keep_nl);

/* Prints "lume-metal: MSG" to stderr, its string arguments escaped as cli_printf does, and
 * returns code (git's error() habit). */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Maps a module's error code to the design's exit code, printing err. */
int cli_fail(int rc, const char *err);

/* Prints the usage of a command to stdout (help) and returns 0 (cli_help.c). */
int cli_help(const char *name);
/* help --flags CMD: its option table, one "--name" a line ("--name VALUE" when it takes one). */
int cli_help_flags(const char *name);

/* getopt_long with the house rules (main.c has already turned CMD -h and CMD --help into help
 * CMD): a bad flag is exit 2, and its reason names it: "--payload needs a value", "--json takes
 * no value", "--p is ambiguous: ...", "unknown flag --paralel; did you mean --parallel?" (the
 * nearest long flag of the command within a third of its length in edits), "unknown flag -x".
 * Returns the option, -1 at the end, or '?' after printing the reason. */
int cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts, const struct option *longopts);

/* --format json|text (as Lume spells it; --json is its alias) into *json: 1, or -1 after
 * printing the reason. */
int cli_format(const char *arg, const char *cmd, int *json);

/* Parses a whole number lo..hi for flag; prints the reason and returns -1, else 1. */
int cli_number(const char *arg, const char *flag, const char *cmd, int lo, int hi, int *out);

/* Prints v as one line of JSON. cJSON escapes C0 controls; this also writes DEL, the C1
 * controls and the bidi overrides as \uXXXX (the same string to a JSON parser) and a byte that
 * is not UTF-8 as \ufffd, so no JSON line acts on a terminal either. */
void cli_print_json(const cJSON *v);

/* Where guest-payload/, manifests/ and build/macos/ are (datadir.h: $LUME_METAL_DATADIR, the
 * installed PREFIX/share/lume-metal, the source tree); prints what is missing and every folder
 * looked in when the one returned lacks the data. */
const char *cli_datadir(void);

/* --version: version, commit, data folder, SHA-256 of the shim and probe (cli_version.c). */
int cli_version(void);


/* Prints a payload's identity as text or, with json, one JSON object. */
void cli_print_payload(const payload_info *p, const char *path, int json);

/* The connection flags every VM command shares (see CONN_FLAGS in main.c): the request they
 * fill for ops (ops/request.h), and how the command renders its results. */
typedef struct {
	ops_request r;
	int json;
	int order_input;   /* --order input: results in the order the VMs were given (cli_run_vms) */
	int doc;           /* --format junit|openmetrics: a render_doc (cmd/render.h), 0 for none */
	const char *textfile; /* status --textfile DIR: also write DIR/lume-metal.prom (render.h) */
} cli_conn;

/* Option rows for the shared flags; a command appends its own and ends with a zero row. */
#define CLI_CONN_OPTIONS \
	{"user", required_argument, NULL, 'u'}, {"identity", required_argument, NULL, 'i'}, \
	{"password-file", required_argument, NULL, CLI_OPT_PASSWORD_FILE}, {"known-hosts", required_argument, NULL, CLI_OPT_KNOWN_HOSTS}, \
	{"accept-new", no_argument, NULL, CLI_OPT_ACCEPT_NEW}, {"host", required_argument, NULL, CLI_OPT_HOST}, \
	{"timeout", required_argument, NULL, CLI_OPT_TIMEOUT}, {"parallel", required_argument, NULL, CLI_OPT_PARALLEL}, \
	{"state", required_argument, NULL, CLI_OPT_STATE}, {"json", no_argument, NULL, CLI_OPT_JSON}, \
	{"lume", required_argument, NULL, CLI_OPT_LUME}, {"wait", required_argument, NULL, CLI_OPT_WAIT}, \
	{"all", no_argument, NULL, CLI_OPT_ALL}, {"lume-default-password", no_argument, NULL, CLI_OPT_LUME_DEFAULT_PASSWORD}, \
	{"port", required_argument, NULL, CLI_OPT_PORT}, {"hosts", required_argument, NULL, CLI_OPT_HOSTS}, \
	{"format", required_argument, NULL, CLI_OPT_FORMAT}
#define CLI_CONN_SHORT "u:i:"
/* Their help, and that of the order and payload rows below, in every usage that takes them. */
#define CLI_CONN_HELP \
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
#define CLI_ORDER_HELP \
	"\nOutput order:\n" \
	"  --order finish|input  finish (the default): each VM's line as it finishes; input: in the\n" \
	"                        order the VMs were given (names, then --host; --all: lume ls's; --hosts:\n" \
	"                        the file's, each host's VMs in its lume ls order), each line as soon as\n" \
	"                        every VM before it is printed. Either way the JSON summary's \"order\"\n" \
	"                        lists the VMs in input order.\n"
#define CLI_PAYLOAD_HELP \
	"\nPayload:\n" \
	"  --payload FILE      a built payload (verified first); otherwise one is built for:\n" \
	"  --target T          macos (default) or linux-sim\n" \
	"  --profile ID        capability profile (default: the workload's)\n" \
	"  --workload ID       workload (default: llama-server)\n"
/* --order finish|input, for the commands that run many VMs (cli_run_vms). */
#define CLI_ORDER_OPTION {"order", required_argument, NULL, CLI_OPT_ORDER}
#define CLI_FLEET_OPTIONS \
	{"canary", required_argument, NULL, CLI_OPT_CANARY}, {"batch", required_argument, NULL, CLI_OPT_BATCH}, \
	{"max-fail", required_argument, NULL, CLI_OPT_MAX_FAIL}, {"rollback-on-fail", no_argument, NULL, CLI_OPT_ROLLBACK_ON_FAIL}
#define CLI_PAYLOAD_OPTIONS \
	{"target", required_argument, NULL, CLI_OPT_TARGET}, {"profile", required_argument, NULL, CLI_OPT_PROFILE}, \
	{"workload", required_argument, NULL, CLI_OPT_WORKLOAD}, {"payload", required_argument, NULL, CLI_OPT_PAYLOAD}

/* The validation flags of validate and deploy (--validate-workload), and what they give. */
typedef ops_validation cli_validate;
#define CLI_VALIDATE_OPTIONS \
	{"model", required_argument, NULL, CLI_OPT_MODEL}, {"text", required_argument, NULL, CLI_OPT_TEXT}, \
	{"chunks", required_argument, NULL, CLI_OPT_CHUNKS}, {"llama-perplexity", required_argument, NULL, CLI_OPT_LLAMA_PERPLEXITY}
/* Takes one validation flag (CLI_VALIDATE_OPTIONS, and --validate-workload): 1 when opt was one, 0
 * when not, -1 after printing a bad value. */
int cli_validate_flag(cli_validate *v, int opt, const char *arg, const char *cmd);
/* After cli_conn_payload: ops_validation_setup under cli_datadir(); prints the reason and returns
 * EXIT_USAGE on bad input. */
int cli_validate_setup(cli_validate *v, cli_conn *c, session_opts *o, int run, const char *cmd);

/* ops_one_vm for the command's one VM (bench, validate); prints the reason and returns its exit
 * code. */
int cli_one_vm(guest_target **out, cli_conn *c, const char *vm, session_opts *o, int long_timeout_s);

/* Sets defaults. */
void cli_conn_init(cli_conn *c);
/* After the flags: ops_request_ready (the config file's values where no flag gave one; a command
 * reads registry and organization itself with cli_conn_setting; --state checked). A bad config
 * file prints "CMD: FILE:LINE: what is wrong" and returns EXIT_USAGE, before anything runs. cli_state_readable (so cli_conn_check) calls it; ledger,
 * report and host, which take --state but no VM, call this instead. */
int cli_conn_ready(cli_conn *c, const char *cmd);
/* cli_conn_ready, then that the ledger reads (ops_request_readable): exit 2, "CMD: --state DIR: cannot be read:
 * PATH: why", before any VM is reached (cli_conn_check calls it; bench, validate and golden
 * too). Not for ledger and report, which show every document that reads and name the others. */
int cli_state_readable(cli_conn *c, const char *cmd);
/* The config file's value of key when no flag gave it (NULL: neither), after cli_conn_ready. */
const char *cli_conn_setting(const cli_conn *c, const char *key);
/* --format of a VM command (cli_format.c): json or text into c->json, or a document of
 * cmd/render.h that cmd makes into c->doc ("status: --format yaml: not json, text, junit or
 * openmetrics" otherwise). 1, or -1 after printing the reason. */
int cli_conn_format(cli_conn *c, const char *arg, const char *cmd);
/* Takes one shared flag: 1 when c was one, 0 when not, -1 after printing a bad value. */
int cli_conn_flag(cli_conn *c, int opt, const char *arg, const char *cmd);
/* Checks the flags against the VM arguments, --state and --host (cli_conn_ready,
 * cli_host_check); prints the reason and returns EXIT_USAGE. */
int cli_conn_check(cli_conn *c, int nvms, const char *cmd);
void cli_conn_free(cli_conn *c);
/* An input error cli_conn_check finds in --host (ops_host_check), for the commands that do not
 * call it. Prints the reason and returns EXIT_USAGE, else EXIT_OK. */
int cli_host_check(const char *spec, const char *cmd);

/* Verdicts in registries (ops_verdicts_setup): --verdicts (flag: "local" or "registry", NULL
 * when not given), else the config file's. After cli_conn_ready; the caller clears *trust with
 * ops_verdicts_clear. Prints the reason and returns EXIT_USAGE (a bad flag, a trusted key that
 * does not load). */
int cli_verdicts_setup(verdicts_cfg *cfg, verdict_trust *trust, const cli_conn *c, const char *flag, const char *cmd);

/* Runs fn on every VM named by vms, --host, --hosts and --all on the fleet engine (cli_vms.c).
 * On a TTY it shows a live progress line and one line per VM as it finishes; otherwise one
 * line (or with --json one object) per VM as it finishes. With --order input (c->order_input)
 * each VM's line waits until every VM before it in input order is printed: the names in the
 * order given, then --host values, or `lume ls`'s order (--all), or the file's (--hosts: host
 * by host, each in its `lume ls` order; names no host lists last). Then a summary by state
 * and by image version; its JSON lists every VM's name in input order ("order"). Returns the exit code of session_exit_code (1 when the run stopped early); no
 * VM at all (--all, or --hosts FILE, listing none) is exit 0, said on stderr, and an empty summary. */
int cli_run_vms(cli_conn *c, int nvms, char **vms, int (*fn)(cJSON **, guest_target *, const session_opts *, char *),
    session_opts *o, const char *cmd);

/* The payload of the payload flags (ops_payload): --payload FILE (verified), or one built for
 * --target, --profile and --workload under <state>/payloads/; o->payload and o->info point into
 * c. Prints the reason and returns its exit code on failure; one with placeholders is refused. */
int cli_conn_payload(cli_conn *c, session_opts *o);


#endif
