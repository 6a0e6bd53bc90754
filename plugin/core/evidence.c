/* evidence: see evidence.h. */
#include "core/evidence.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

int
evidence_write(const char *dir, const evidence_file *files, size_t n, char *err)
{
	char tmp[4096], path[4400], sha[65];
	lm_buf sums = {0};
	int rc = LM_OK;

	if (access(dir, F_OK) == 0)
		return lm_err(err, LM_EINPUT, "%s: already exists; name a new evidence directory", dir);
	if (lm_fmt(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid()) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", dir);
	if (mkdir(tmp, 0755) != 0)
		return lm_err(err, LM_EINPUT, "%s: %s", tmp, strerror(errno));
	for (size_t i = 0; i < n && rc == LM_OK; i++) {
		if (strchr(files[i].name, '/') != NULL || snprintf(path, sizeof path, "%s/%s", tmp, files[i].name) < 0)
			rc = lm_err(err, LM_EFAIL, "%s: not a plain file name", files[i].name);
		else if ((rc = lm_write_file_atomic(path, files[i].data, files[i].len, 0644, err)) == LM_OK) {
			lm_sha256_hex(sha, files[i].data, files[i].len);
			if (lm_buf_addf(&sums, "%s  %s\n", sha, files[i].name) != 0)
				rc = lm_err(err, LM_EFAIL, "out of memory");
		}
	}
	if (rc == LM_OK && snprintf(path, sizeof path, "%s/SHA256SUMS", tmp) >= 0)
		rc = lm_write_file_atomic(path, sums.data ? sums.data : "", sums.len, 0644, err);
	if (rc == LM_OK && rename(tmp, dir) != 0)
		rc = lm_err(err, LM_EFAIL, "%s: %s", dir, strerror(errno));
	if (rc != LM_OK) {
		for (size_t i = 0; i < n; i++)
			if (snprintf(path, sizeof path, "%s/%s", tmp, files[i].name) >= 0)
				unlink(path);
		snprintf(path, sizeof path, "%s/SHA256SUMS", tmp);
		unlink(path);
		rmdir(tmp);
	}
	lm_buf_free(&sums);
	return rc;
}
