/* bench-upload: SFTP against SCP for one file, side by side on one connection, alternating
 * the two each round so load on the machine falls on both. Prints each method's median, min
 * and max wall time and MB/s, and the ratio. Usage:
 *   bench-upload HOST PORT USER KEY KNOWN_HOSTS REMOTE_DIR FILE ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/ssh.h"
#include "core/util.h"

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	ssh_opts o = {0};
	ssh_conn *c;
	char err[LM_ERRLEN];
	int why, rounds;
	double t[2][1000];
	uint64_t sent[2] = {0};

	if (argc != 9 || (rounds = atoi(argv[8])) < 1 || rounds > 1000) {
		fprintf(stderr, "usage: bench-upload HOST PORT USER KEY KNOWN_HOSTS REMOTE_DIR FILE ROUNDS\n");
		return 2;
	}
	o.host = argv[1], o.port = atoi(argv[2]), o.user = argv[3], o.identity = argv[4];
	o.known_hosts = argv[5], o.accept_new = 1, o.deadline_ms = lm_now_ms() + 3600 * 1000;
	if (ssh_connect(&c, &why, &o, err) != LM_OK) {
		fprintf(stderr, "bench-upload: %s\n", err);
		return 1;
	}
	for (int r = 0; r < rounds; r++)
		for (int m = 0; m < 2; m++) {
			int k = (r % 2) ? 1 - m : m; /* alternate which goes first */
			int64_t t0 = lm_now_ms();
			int rc = k == 0 ? ssh_upload(c, argv[7], argv[6], "bench.bin", &sent[0], err)
			    : ssh_upload_scp(c, argv[7], argv[6], "bench.bin", &sent[1], err);

			if (rc != LM_OK) {
				fprintf(stderr, "bench-upload: %s\n", err);
				return 1;
			}
			t[k][r] = (double)(lm_now_ms() - t0);
		}
	for (int m = 0; m < 2; m++)
		qsort(t[m], (size_t)rounds, sizeof t[m][0], cmp);
	for (int m = 0; m < 2; m++) {
		double med = rounds % 2 ? t[m][rounds / 2] : (t[m][rounds / 2 - 1] + t[m][rounds / 2]) / 2;

		printf("%-4s %10ju bytes  median %8.1f ms  min %8.1f  max %8.1f  %8.2f MB/s\n", m ? "scp" : "sftp",
		    (uintmax_t)sent[m], med, t[m][0], t[m][rounds - 1], med > 0 ? (double)sent[m] / 1e3 / med : 0);
		t[m][0] = med;
	}
	printf("ratio sftp/scp median time: %.3f\n", t[1][0] > 0 ? t[0][0] / t[1][0] : 0);
	ssh_close(c);
	return 0;
}
