#!/bin/sh
# A CGI script: sleeps a random 0..9 ms (so CGI children finish in any order), then answers.
sleep "0.00$(($(od -An -N1 -tu1 /dev/urandom) % 10))"
printf 'Content-Type: text/plain\r\n\r\n%s done\n' "$QUERY_STRING"
