/*
 * common.h: the helpers every test program in tests/progs shares (jitter from DDBX_JITTER,
 * die/fail, connect and accept helpers, exact reads and writes, escaping, child reaping).
 * They are the Figure 1 example's own helpers, kept in one place: examples/figure1/figure1.h
 * (which also has the example's port-file helpers; everything there is `static` and marked
 * UNUSED, so a program that uses only part of it builds with -Wall -Wextra -Werror).
 */
#ifndef DDBX_TEST_PROGS_COMMON_H
#define DDBX_TEST_PROGS_COMMON_H

#include "../../examples/figure1/figure1.h"

#endif
