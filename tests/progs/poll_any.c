/*
 * poll_any: select_any (see select_any.c) with poll() instead of select():
 * which connection does poll() report readable, and how are the messages of
 * three concurrent senders interleaved and split?  The same program, the
 * same output; only the readiness call differs.
 */
#define WAIT_WITH_POLL
#include "select_any.c"
