/* relay: reaches guests through their Mac host's one SSH session, as OpenSSH's ProxyJump does.
 * Each guest connection is a direct-tcpip channel from the host to the guest's NAT address,
 * bridged to one end of a socketpair; the caller speaks SSH to the guest over the other end
 * (ssh_connect_fd), so the guest's host key and login are checked as for a direct connection
 * and no TCP connection goes from this machine to a guest.
 *
 * One thread drives every host session without blocking, on one poll loop. libssh2 keeps a
 * single half-sent packet per session, so while one channel's send is pending nothing else
 * on that session sends until it completes. */
#ifndef LM_RELAY_H
#define LM_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "net/ssh.h"

typedef struct relay relay;

/* Starts the relay thread. *out belongs to the caller (relay_free). */
int relay_new(relay **out, char *err);

/* Hands a connected host session to the relay, which owns it from now on; *idx names it in
 * relay_open. The caller must not use host afterwards. */
int relay_add(relay *r, ssh_conn *host, size_t *idx, char *err);

/* Opens a channel from host idx to addr:port, by deadline_ms. On LM_OK *fd is the caller's end
 * of the stream (hand it to ssh_connect_fd). On failure *why is SSH_UNREACHABLE (the host
 * could not connect: the guest is down or its address is wrong), or SSH_TIMEOUT, or
 * SSH_PROTOCOL (the host session broke), and err says which host and address. */
int relay_open(relay *r, size_t idx, const char *addr, int port, int64_t deadline_ms, int *fd, int *why,
    char *err);

/* Stops the thread, closes every channel and disconnects every host. NULL is a no-op. */
void relay_free(relay *r);

#endif
