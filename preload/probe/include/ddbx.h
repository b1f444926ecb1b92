/*
 * ddbx.h: publish variables of a program for ddbx's `stop if` predicates.
 *
 *     #include "ddbx.h"
 *     ddbx_set("x", 1);          // this process's variable x is now 1
 *
 * Under `ddbx record` / `ddbx replay`, ddbx's preload library defines ddbx_set, and each call
 * is an event of the process: logged while recording, checked while replaying, and evaluated
 * against predicates such as `--stop-if 'x1 == 1 && x4 == 1'`.
 *
 * Without ddbx nothing defines it: the weak reference below is then null and the macro makes
 * the call a no-op. No library is needed to build or run the program. (This relies on the
 * reference being resolved at load time, as it is in position-independent executables, the
 * default of Debian's and most distributions' gcc.)
 */
#ifndef DDBX_H
#define DDBX_H

#ifdef __cplusplus
extern "C" {
#endif

/* Publishes `name = value` for the calling process (provided by ddbx's preload). */
extern void ddbx_set(const char *name, long value) __attribute__((weak));

/* Calls ddbx_set when it exists; a function-like macro does not expand itself, so the name
 * inside refers to the function. */
#define ddbx_set(name, value) (ddbx_set ? ddbx_set((name), (value)) : (void)0)

#ifdef __cplusplus
}
#endif
#endif
