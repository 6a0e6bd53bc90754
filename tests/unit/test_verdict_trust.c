/* verdict_trust_load: trusted-key files are strict. Every public key of a file is trusted;
 * anything else in it (text around a block, a private key, a certificate, garbage) is refused
 * with its file and line; a file or folder others may write is refused as sshd's StrictModes
 * refuses authorized_keys (up to $HOME, or to / outside it); past VERDICT_TRUST_MAX keys the
 * list is refused, naming the key that went over. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/verdict.h"
#include "unit.h"

static char dir[] = "/tmp/lm-unit-trust.XXXXXX";
static char home[4200];

/* dir/home/NAME into out. */
static const char *
at(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", home, name);
	return out;
}

/* Writes text to home/name with mode; the path into out. */
static const char *
put(char *out, size_t len, const char *name, const char *text, mode_t mode)
{
	FILE *f = fopen(at(out, len, name), "w");

	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0 || chmod(out, mode) != 0)
		printf("# cannot write %s\n", out);
	return out;
}

/* The text of file path (static; the caller copies it). */
static const char *
slurp(const char *path)
{
	static char buf[16384];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

/* Loads list: the return code; *n the keys trusted (0 on a refusal). */
static int
load(const char *list, size_t *n, char *err)
{
	verdict_trust t;
	int rc = verdict_trust_load(&t, list, err);

	*n = t.n;
	verdict_trust_clear(&t);
	return rc;
}

int
main(void)
{
	char err[LM_ERRLEN], p[4300], q[4300], k1[4300], k2[4300], id1[VERDICT_KEYID_LEN + 1], id2[VERDICT_KEYID_LEN + 1];
	char pub1[1024], pub2[1024], text[20000], list[9000];
	lm_buf many = {0};
	verdict_trust t;
	struct stat st;
	size_t n;

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(home, sizeof home, "%s/home", dir);
	if (mkdir(home, 0700) != 0 || setenv("HOME", home, 1) != 0)
		return 1;
	if (verdict_key_generate(id1, NULL, at(k1, sizeof k1, "k1"), err) != LM_OK ||
	    verdict_key_generate(id2, NULL, at(k2, sizeof k2, "k2"), err) != LM_OK) {
		printf("# %s\n", err);
		return 1;
	}
	snprintf(pub1, sizeof pub1, "%s", slurp(at(p, sizeof p, "k1.pub")));
	snprintf(pub2, sizeof pub2, "%s", slurp(at(p, sizeof p, "k2.pub")));

	/* Every key of a file. */
	snprintf(text, sizeof text, "%s\n%s", pub1, pub2);
	put(p, sizeof p, "two.pub", text, 0644);
	UNIT_OK(verdict_trust_load(&t, p, err) == LM_OK && t.n == 2, "a file with two public keys trusts both (%s)", err);
	UNIT_OK(t.n == 2 && strcmp(verdict_key_id(t.keys[0]), id1) == 0 && strcmp(verdict_key_id(t.keys[1]), id2) == 0,
	    "... in the file's order, each with its own id");
	verdict_trust_clear(&t);
	snprintf(text, sizeof text, "%s%s", pub1, pub1);
	UNIT_OK(load(put(p, sizeof p, "dup.pub", text, 0644), &n, err) == LM_OK && n == 1, "the same key twice is trusted once");
	snprintf(list, sizeof list, "~/k1.pub, ~/two.pub");
	UNIT_OK(load(list, &n, err) == LM_OK && n == 2, "~/ in the list is $HOME/, and a key in two files counts once (%s)", err);

	/* Anything that is not a public key: refused, with its file and line. */
	snprintf(text, sizeof text, "# the CI key\n%s", pub1);
	UNIT_OK(load(put(p, sizeof p, "comment.pub", text, 0644), &n, err) == LM_EINPUT && n == 0,
	    "text before the block is refused");
	UNIT_HAS(err, "comment.pub:1: not part of a public key", "... naming the file and line 1 (%s)", err);
	snprintf(text, sizeof text, "%s\n%sKey for CI, rotated 2026\n", pub1, pub2);
	UNIT_OK(load(put(p, sizeof p, "after.pub", text, 0644), &n, err) == LM_EINPUT, "text after the blocks is refused");
	UNIT_HAS(err, "after.pub:8:", "... naming its line, 8 (%s)", err);
	UNIT_OK(load(k1, &n, err) == LM_EINPUT, "a private key as a trusted-key file is refused, not taken for its public half");
	UNIT_HAS(err, "k1:1: a private key", "... naming it (%s)", err);
	put(p, sizeof p, "cert.pem", "-----BEGIN CERTIFICATE-----\nMIIBLjCB4aADAgECAhQ=\n-----END CERTIFICATE-----\n", 0644);
	UNIT_OK(load(p, &n, err) == LM_EINPUT, "a certificate is refused");
	UNIT_HAS(err, "cert.pem:1: a certificate, not a public key", "... said so (%s)", err);
	put(p, sizeof p, "junk.pub", "\x01\x02 garbage\n", 0644);
	UNIT_OK(load(p, &n, err) == LM_EINPUT, "garbage is refused");
	UNIT_HAS(err, "junk.pub:1:", "... with its line (%s)", err);
	put(p, sizeof p, "bad64.pub", "\n-----BEGIN PUBLIC KEY-----\nMCowBQYDK2Vw\n-----END PUBLIC KEY-----\n", 0644);
	UNIT_OK(load(p, &n, err) == LM_EINPUT, "a block that is no public key is refused");
	UNIT_HAS(err, "bad64.pub:2: the public key block does not decode", "... naming the line it begins on (%s)", err);
	put(p, sizeof p, "hdr.pub", "-----BEGIN PUBLIC KEY-----\nProc-Type: 4,ENCRYPTED\n-----END PUBLIC KEY-----\n", 0644);
	UNIT_OK(load(p, &n, err) == LM_EINPUT, "a header line inside the block is refused");
	UNIT_HAS(err, "hdr.pub:2: not base64", "... with its line (%s)", err);
	snprintf(text, sizeof text, "%.*s", (int)(strstr(pub1, "-----END") - pub1), pub1);
	UNIT_OK(load(put(p, sizeof p, "open.pub", text, 0644), &n, err) == LM_EINPUT, "a block without its END line is refused");
	UNIT_HAS(err, "open.pub:1: the public key begun here has no", "... said (%s)", err);
	UNIT_OK(load(put(p, sizeof p, "blank.pub", "\n \n", 0644), &n, err) == LM_EINPUT, "a file with no key is refused");
	UNIT_HAS(err, "blank.pub: no public key in it", "... said (%s)", err);

	/* StrictModes: the file, and each folder up to $HOME (or /). */
	UNIT_OK(load(put(p, sizeof p, "gw.pub", pub1, 0664), &n, err) == LM_EINPUT && n == 0, "a group-writable file is refused");
	UNIT_HAS(err, "gw.pub: refused: a trusted-key file must be owned by you or root and writable by no one else",
	    "... said, naming it (%s)", err);
	UNIT_OK(load(put(p, sizeof p, "ww.pub", pub1, 0646), &n, err) == LM_EINPUT, "a world-writable file is refused");
	if (mkdir(at(q, sizeof q, "open"), 0755) != 0 || chmod(q, 0777) != 0)
		return 1;
	UNIT_OK(load(put(p, sizeof p, "open/k.pub", pub1, 0644), &n, err) == LM_EINPUT, "a file in a world-writable folder is refused");
	UNIT_HAS(err, "its folder ", "... naming the folder (%s)", err);
	UNIT_HAS(err, "/home/open is writable by its group or others", "... and why");
	chmod(q, 0755);
	UNIT_OK(load(p, &n, err) == LM_OK && n == 1, "... trusted once the folder is 0755 (%s)", err);
	chmod(home, 0770);
	UNIT_OK(load(p, &n, err) == LM_EINPUT, "$HOME itself group-writable: refused (the walk checks it)");
	UNIT_HAS(err, "/home is writable by its group or others", "... naming it (%s)", err);
	chmod(home, 0700);
	if (symlink(p, at(q, sizeof q, "link.pub")) != 0)
		return 1;
	UNIT_OK(load(q, &n, err) == LM_OK && n == 1, "a link is followed: its target's path is checked (%s)", err);
	/* Outside $HOME the walk goes up to /: dir's parent is /tmp here. */
	snprintf(q, sizeof q, "%s/out.pub", dir);
	if (stat("/tmp", &st) == 0 && (st.st_mode & 022) != 0 && strncmp(dir, "/tmp/", 5) == 0) {
		FILE *f = fopen(q, "w");

		if (f == NULL || fputs(pub1, f) < 0 || fclose(f) != 0)
			return 1;
		chmod(q, 0644);
		UNIT_OK(load(q, &n, err) == LM_EINPUT, "a file outside $HOME is checked up to /: /tmp (mode 1777) refuses it");
		UNIT_HAS(err, "its folder /tmp is writable by its group or others", "... naming /tmp (%s)", err);
	} else
		printf("ok - # SKIP /tmp is not group- or world-writable here\n");

	/* At most VERDICT_TRUST_MAX keys, in one file or across the list. */
	for (int i = 0; i < VERDICT_TRUST_MAX + 1; i++) {
		char name[32], kid[VERDICT_KEYID_LEN + 1];

		snprintf(name, sizeof name, "m%02d", i);
		if (verdict_key_generate(kid, NULL, at(q, sizeof q, name), err) != LM_OK)
			return 1;
		strcat(q, ".pub");
		if (i < VERDICT_TRUST_MAX && lm_buf_add(&many, slurp(q), strlen(slurp(q))) != 0)
			return 1;
		if (i == VERDICT_TRUST_MAX - 1)
			put(p, sizeof p, "max.pub", many.data, 0644);
	}
	UNIT_OK(load(p, &n, err) == LM_OK && n == VERDICT_TRUST_MAX, "a file of %d keys trusts all %d (%s)",
	    VERDICT_TRUST_MAX, VERDICT_TRUST_MAX, err);
	snprintf(list, sizeof list, "%s,%s", p, q);
	UNIT_OK(load(list, &n, err) == LM_EINPUT && n == 0, "one key more, in another file: the list is refused");
	UNIT_HAS(err, "m32.pub:1: more than 32 trusted keys: refused", "... naming the key that went over (%s)", err);
	lm_buf_add(&many, slurp(q), strlen(slurp(q)));
	UNIT_OK(load(put(p, sizeof p, "over.pub", many.data, 0644), &n, err) == LM_EINPUT, "%d keys in one file: refused",
	    VERDICT_TRUST_MAX + 1);
	UNIT_HAS(err, "over.pub:97: more than 32 trusted keys", "... naming its line (%s)", err);
	lm_buf_free(&many);
	{
		char cmd[4300];

		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return 1;
	}
	UNIT_DONE();
}
