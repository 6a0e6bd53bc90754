/* ssh_hostkey: the guest's host key against known_hosts (net/hostfile.h) and its addition
 * there, the names a key is known under, and fingerprints (ssh.h). */
#include "net/ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/image.h"
#include "net/hostfile.h"
#include "net/ssh_int.h"

void
ssh_fingerprint(char out[64], const unsigned char *blob, size_t len)
{
	unsigned char d[32], b64[48];
	unsigned n = 0;
	int m;

	EVP_Digest(blob, len, d, &n, EVP_sha256(), NULL);
	m = EVP_EncodeBlock(b64, d, 32);
	while (m > 0 && b64[m - 1] == '=')
		m--;
	snprintf(out, 64, "SHA256:%.*s", m, (char *)b64);
}

/* The name a host key is known under (hostfile_name adds the port). */
const char *
ssh_key_name(const ssh_conn *c)
{
	return c->o->host_key_alias ? c->o->host_key_alias : c->o->host;
}

/* Lume has no rule of its own for VM names (trycua/cua libs/lume: LumeController's
 * normalizeVMName only turns "name:tag" into "name_tag", and Home.getVMDirectory makes the name a
 * directory), so this is a conservative one: letters, digits, '.', '_' and '-', not starting
 * with '-' or '.', at most 64 bytes. */
int
ssh_vm_name_ok(const char *name)
{
	return image_vm_name_ok(name); /* one rule for a VM name, wherever it is used */
}

/* A name fit to be written into known_hosts: host names and addresses (IPv6 and its %zone
 * included) only, so no space, newline, comma, wildcard, negation or marker can turn one line
 * into another host's entry; the VM of an alias "HOST/VM" must also pass ssh_vm_name_ok. */
int
ssh_key_name_ok(const ssh_conn *c)
{
	const char *name = ssh_key_name(c), *vm = c->o->host_key_alias ? strrchr(name, '/') : NULL;
	size_t n = strlen(name);

	if (n == 0 || n > 255 || name[0] == '-' ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:%/") != n)
		return 0;
	return vm == NULL || ssh_vm_name_ok(vm + 1);
}

/* OpenSSH's name of a libssh2 host key type. */
static const char *
key_type_name(int type)
{
	switch (type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA: return "ssh-rsa";
	case LIBSSH2_HOSTKEY_TYPE_DSS: return "ssh-dss";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return "ecdsa-sha2-nistp256";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return "ecdsa-sha2-nistp384";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return "ecdsa-sha2-nistp521";
	case LIBSSH2_HOSTKEY_TYPE_ED25519: return "ssh-ed25519";
	default: return NULL;
	}
}

/* Appends "NAME KEYTYPE BASE64\n" to known_hosts with O_APPEND, as OpenSSH does: every other
 * line and comment stays as it is, a symlink is followed (the file it names gets the line),
 * and a file without a final newline gets one first. */
static int
append_known(ssh_conn *c, const char *name, const char *key, size_t len, int type, char *err)
{
	char *b64 = NULL, last = '\n';
	lm_buf line = {0};
	struct stat st;
	int fd = -1, rc = LM_OK;
	size_t off = 0;
	ssize_t w;

	if ((b64 = malloc(4 * ((len + 2) / 3) + 1)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)key, (int)len);
	if ((fd = open(c->o->known_hosts, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0600)) < 0 ||
	    fstat(fd, &st) != 0) {
		if (errno == EMFILE || errno == ENFILE)
			ssh_nofds_note();
		rc = lm_err(err, LM_EFAIL, "%s: %s", c->o->known_hosts, strerror(errno));
		goto done;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = lm_err(err, LM_EFAIL, "%s: not a regular file", c->o->known_hosts);
		goto done;
	}
	if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
		last = '\n';
	if ((last != '\n' && lm_buf_add(&line, "\n", 1) != 0) ||
	    lm_buf_addf(&line, "%s %s %s\n", name, key_type_name(type), b64) != 0) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	for (; off < line.len; off += (size_t)w)
		if ((w = write(fd, line.data + off, line.len - off)) < 0) {
			rc = lm_err(err, LM_EFAIL, "%s: %s", c->o->known_hosts, strerror(errno));
			goto done;
		}
done:
	if (fd >= 0)
		close(fd);
	lm_buf_free(&line);
	free(b64);
	return rc;
}

/* The known_hosts verdict on the offered key (hostfile.h) into *r: LM_OK for a match or an
 * unknown key (r->status says which), else a refusal, why and err saying what it is: a changed
 * key (both fingerprints, and the line), a revoked one (the line), or a file that cannot be read.
 * meanwhile: said of a changed key found on the check under the lock. */
static int
known_verdict(ssh_conn *c, hostfile_result *r, const char *key, size_t len, int type, const char *meanwhile,
    int *why, char *err)
{
	char fp[64], old[64], typ[128] = "", msg[LM_ERRLEN];
	int rc = hostfile_check(r, c->o->known_hosts, c->o->host, c->o->port, c->o->host_key_alias,
	    (const unsigned char *)key, len, msg);

	*why = rc == LM_OK && r->status != HOSTFILE_MATCH && r->status != HOSTFILE_UNKNOWN ? SSH_HOSTKEY_MISMATCH
	    : SSH_HOSTKEY_UNKNOWN;
	if (rc != LM_OK) {
		if (r->sys_errno == EMFILE || r->sys_errno == ENFILE)
			ssh_nofds_note();
		return lm_err(err, rc, "%s: %s", c->where, msg);
	}
	ssh_fingerprint(fp, (const unsigned char *)key, len);
	if (r->status == HOSTFILE_REVOKED)
		return lm_err(err, LM_EFAIL, "%s: HOST KEY REVOKED: the guest offers %s, which %s marks @revoked at line "
		    "%lu%s; refusing", c->where, fp, c->o->known_hosts, r->line, meanwhile);
	if (r->status != HOSTFILE_CHANGED)
		return LM_OK;
	ssh_fingerprint(old, r->old, r->old_len);
	if (r->other_types)
		snprintf(typ, sizeof typ, " (%s; the host is known only by other key types)", key_type_name(type));
	return lm_err(err, LM_EFAIL, "%s: HOST KEY CHANGED: the guest offers %s%s but %s has %s at line %lu%s; refusing "
	    "(if the guest was really rebuilt, remove its line from %s)", c->where, fp, typ, c->o->known_hosts, old,
	    r->line, meanwhile, c->o->known_hosts);
}

/* Adds a host key to known_hosts. Workers of one run and other runs may add keys at the same
 * time: the file is read and checked again under a mutex and an flock on FILE.lock, then the
 * one line is appended, so no writer drops another's line and a key added meanwhile is
 * checked like any other. */
static int
add_known(ssh_conn *c, const char *key, size_t len, int type, int *why, char *err)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	hostfile_result r;
	char lock[4200];
	int fd = -1, rc;

	*why = SSH_HOSTKEY_UNKNOWN;
	if (lm_fmt(lock, sizeof lock, "%s.lock", c->o->known_hosts) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", c->o->known_hosts);
	pthread_mutex_lock(&mu);
	if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0 || flock(fd, LOCK_EX) != 0) {
		if (errno == EMFILE || errno == ENFILE)
			ssh_nofds_note();
		rc = lm_err(err, LM_EFAIL, "%s: %s", lock, strerror(errno));
		goto done;
	}
	if ((rc = known_verdict(c, &r, key, len, type, " (added meanwhile)", why, err)) == LM_OK &&
	    r.status == HOSTFILE_UNKNOWN) /* else added meanwhile */
		rc = append_known(c, r.name, key, len, type, err);
	hostfile_result_free(&r);
done:
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&mu);
	return rc;
}

int
ssh_check_hostkey(ssh_conn *c, int *why, char *err)
{
	hostfile_result r;
	const char *key;
	char fp[64];
	size_t len;
	int type, rc;

	*why = SSH_PROTOCOL;
	if ((key = libssh2_session_hostkey(c->s, &len, &type)) == NULL || key_type_name(type) == NULL)
		return lm_err(err, LM_EFAIL, "%s: no usable host key", c->where);
	rc = known_verdict(c, &r, key, len, type, "", why, err);
	if (rc == LM_OK && r.status == HOSTFILE_UNKNOWN && !c->o->accept_new) {
		ssh_fingerprint(fp, (const unsigned char *)key, len);
		rc = lm_err(err, LM_EFAIL, "%s: unknown host key %s (not in %s); pass --accept-new to trust it",
		    c->where, fp, c->o->known_hosts);
	} else if (rc == LM_OK && r.status == HOSTFILE_UNKNOWN)
		rc = add_known(c, key, len, type, why, err);
	/* What was skipped: after a refusal's message, else for the caller (ssh_known_hosts_notes). */
	if (r.notes.len && rc != LM_OK && strlen(err) < LM_ERRLEN - 1)
		snprintf(err + strlen(err), LM_ERRLEN - strlen(err), " (known hosts lines skipped: %s)", r.notes.data);
	else if (r.notes.len)
		snprintf(c->notes, sizeof c->notes, "%s", r.notes.data);
	hostfile_result_free(&r);
	return rc;
}
