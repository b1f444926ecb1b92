"""A tiny ASGI app for uvicorn.sh: answers `/ping` with `pong`, and any other path with the
request's arrival number (1, 2, …), so the answers show the order the server took them."""

arrivals = 0


async def app(scope, receive, send):
    global arrivals
    if scope["type"] != "http":
        return
    if scope["path"] == "/ping":
        body = b"pong\n"
    else:
        arrivals += 1
        body = b"%d\n" % arrivals
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
