/* hostfile: an OpenSSH known_hosts file read as OpenSSH reads it (sshd(8) "SSH_KNOWN_HOSTS FILE
 * FORMAT"; OpenSSH's hostfile.c, match.c and sshconnect.c check_host_key), for ssh_hostkey.c's
 * host-key check: markers, host patterns (wildcards, negation, [host]:port, case), hashed names,
 * keys. A line that cannot be read is skipped with a note, never a reason to fail. Never prints. */
#ifndef LM_HOSTFILE_H
#define LM_HOSTFILE_H

#include <stddef.h>

#include "core/util.h"

/* Whether a line's host field (field[0..len)) names name: 1 yes, 0 no, -1 a hashed field OpenSSH
 * cannot read (its line is unreadable). name is what OpenSSH looks up (hostfile_name). A plain
 * field is a comma-separated list of patterns with '*' and '?' wildcards, compared without
 * regard to case; a negated pattern ("!PATTERN") that matches means the field does not name the
 * host, whatever else matches; a pattern of 1023 bytes or more matches nothing. A hashed field
 * (HashKnownHosts) is "|1|SALT|HASH": it names name when it is exactly "|1|" base64(SALT) "|"
 * base64(HMAC-SHA1(SALT, name)), SALT decoding to 20 bytes. */
int hostfile_match_hosts(const char *field, size_t len, const char *name);

/* The name a host key is looked up and recorded under, as OpenSSH's: alias when not NULL (as it
 * is), else host ("[host]:port" for a port other than 0 and 22), a host that is not an address
 * lower-cased. Caller frees; NULL when out of memory. */
char *hostfile_name(const char *host, int port, const char *alias);

/* Reads a key "TYPE BASE64" (the rest of the line after it is its comment) as OpenSSH's
 * sshkey_read does: a known type name, base64 that decodes, and a key blob of that type whose
 * fields are whole (nothing after them). *blob (caller frees) gets the blob. LM_OK, or LM_EINPUT
 * with why (whylen bytes) saying what is wrong. Types: ssh-ed25519, ecdsa-sha2-nistp256/384/521
 * (the point on its curve), ssh-rsa (1024 to 16384 bits; rsa-sha2-256/512 name the same key),
 * ssh-dss, sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com. Certificates are not
 * read (their lines are unreadable here). */
int hostfile_read_key(const char *s, unsigned char **blob, size_t *len, char *why, size_t whylen);

/* A line's marker. */
enum { HOSTFILE_MARK_NONE, HOSTFILE_MARK_CA, HOSTFILE_MARK_REVOKED };

typedef struct {
	int marker;
	unsigned char *key; /* the key blob (caller frees) */
	size_t key_len;
} hostfile_entry;

/* One line (up to its first newline): 1 when it is an entry about name (*e filled), 0 when it is
 * not (blank, a comment, another host's), -1 when it cannot be read (why says why). name NULL:
 * every host field matches. A line is unreadable for a bad marker, no field after the host field,
 * a hashed host field OpenSSH cannot read (whoever it names), or, when it names the host, no key
 * or one hostfile_read_key refuses; another host's key is not read, as OpenSSH does not. */
int hostfile_line(hostfile_entry *e, const char *line, const char *name, char *why, size_t whylen);

/* The verdict of hostfile_check, OpenSSH's check_host_key for an offered plain key. */
enum {
	HOSTFILE_UNKNOWN,  /* no entry for the host (OpenSSH's HOST_NEW) */
	HOSTFILE_MATCH,    /* an entry for the host holds the offered key */
	HOSTFILE_CHANGED,  /* entries for the host, none with the offered key (of any type) */
	HOSTFILE_REVOKED,  /* a @revoked line for the host holds the offered key */
};

typedef struct {
	int status;
	char *name;          /* what was looked up, and the name to record the key under (owned) */
	unsigned long line;  /* MATCH: the matching line; CHANGED: the last entry for the host;
	                      * REVOKED: the @revoked line */
	char type[48];       /* CHANGED: that entry's key type */
	unsigned char *old;  /* CHANGED: that entry's key blob (owned) */
	size_t old_len;
	int other_types;     /* CHANGED: no entry for the host is of the offered key's type */
	lm_buf notes;        /* "PATH:LINE: why" for each line skipped that could be the host's
	                      * (unreadable, or @cert-authority, which is not supported), joined by
	                      * "; ", at most 8 then how many more; empty: nothing to say */
	unsigned nnotes;
	int sys_errno;       /* the errno of a failed stat or open (EMFILE: out of descriptors) */
} hostfile_result;

/* Checks the offered key blob key[0..len) of host:port (port 0 is 22; alias: OpenSSH's
 * HostKeyAlias, or NULL) against known_hosts at path, into *r (hostfile_result_free). A missing
 * file has no entries; anything else that is not a regular file, or cannot be opened or read,
 * is LM_EINPUT with err. As OpenSSH does, a host unknown as "[host]:port" whose key is an entry
 * of the plain host name is a MATCH (not recorded again); unlike OpenSSH, which then records the
 * key under "[host]:port", one @revoked under the plain name stays REVOKED. */
int hostfile_check(hostfile_result *r, const char *path, const char *host, int port, const char *alias,
    const unsigned char *key, size_t len, char *err);
void hostfile_result_free(hostfile_result *r);

#endif
