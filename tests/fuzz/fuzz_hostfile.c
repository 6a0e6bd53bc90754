/* A known_hosts file: hostfile_check of a fixed key for a host on port 22, another port and
 * under an alias, then each line through hostfile_line (every host field matching, so every
 * key is read) and its host field through hostfile_match_hosts. Invariants: a verdict is one of
 * the four, a change carries the entry's key, a match or a revocation names a line. */
#include "fuzz.h"
#include "net/hostfile.h"

/* An ed25519 host key blob: "ssh-ed25519", then 32 bytes. */
static const unsigned char key[] = {
	0, 0, 0, 11, 's', 's', 'h', '-', 'e', 'd', '2', '5', '5', '1', '9', 0, 0, 0, 32,
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
	30, 31, 32,
};

FUZZ_TARGET(hostfile)
{
	static const struct {
		const char *host, *alias;
		int port;
	} q[] = {{"guest.example", NULL, 22}, {"127.0.0.1", NULL, 2222}, {"10.0.0.5", "Mac1/tahoe", 22}};
	const char *path = fuzz_path("known_hosts");
	char err[LM_ERRLEN], why[128], *text = fuzz_str(data, size), *line, *next;

	fuzz_write(path, data, size);
	for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
		hostfile_result r;

		if (fuzz_note("hostfile_check", hostfile_check(&r, path, q[i].host, q[i].port, q[i].alias, key,
		    sizeof key, err), err) == LM_OK) {
			if (r.status < HOSTFILE_UNKNOWN || r.status > HOSTFILE_REVOKED || r.name == NULL ||
			    (r.status == HOSTFILE_CHANGED && r.old == NULL) || (r.status != HOSTFILE_UNKNOWN && r.line == 0))
				__builtin_trap();
			if (fuzz_verbose())
				fprintf(stderr, "  %s: status %d line %lu notes %s\n", r.name, r.status, r.line,
				    r.notes.data ? r.notes.data : "");
		}
		hostfile_result_free(&r);
	}
	for (line = text; line != NULL; line = next) {
		hostfile_entry e;
		size_t f;

		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (hostfile_line(&e, line, NULL, why, sizeof why) == 1)
			free(e.key);
		f = strcspn(line, " \t");
		hostfile_match_hosts(line, f, "guest.example");
		hostfile_match_hosts(line, f, "[127.0.0.1]:2222");
	}
	free(text);
	return 0;
}
