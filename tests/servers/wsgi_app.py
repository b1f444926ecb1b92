"""A tiny WSGI app for gunicorn.sh: answers `PATH pid` (the pid zero-padded, so that every
answer has the same length whatever the pid)."""
import os


def app(environ, start_response):
    body = ("%s %010d\n" % (environ["PATH_INFO"], os.getpid())).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
