/* stub_ssh: plugin/net/ssh.c's functions for the fuzz harnesses, with no network. A connect always
 * succeeds; each ssh_exec or ssh_upload takes the next answer of what stub_ssh_feed was given:
 *
 *   answers = answer *( RS answer )            RS = 0x1e (FUZZ_RS)
 *   answer  = status stdout [ US stderr ]      US = 0x1f
 *   status  = "0".."9"  ran, exited with that code
 *           | "S"       died of signal KILL (ssh_exec fails, as plugin/net/ssh.c does)
 *           | "T"       timed out (fails, "timed out" in the message)
 *           | "E"       the channel could not be opened (fails)
 *           | any other byte: ran, exited with the byte's value
 * An empty answer is "0": exited 0, printed nothing.
 *
 * An upload uses only the status: "0" uploaded, anything else fails with stderr as the reason.
 * A channel (ssh_chan_open) takes one answer when it opens; see stub_ssh.c.
 * Once the answers run out, every exec and upload fails as a lost connection would. */
#ifndef LM_STUB_SSH_H
#define LM_STUB_SSH_H

#include <stddef.h>
#include <stdint.h>

#define STUB_SSH_US 0x1f

/* Answers from d[0..n) (not copied: it must outlive the calls that use them). */
void stub_ssh_feed(const uint8_t *d, size_t n);

#endif
