#!/bin/sh
# A minimal headless $BROWSER for authorization servers that redirect at once (the MCP
# conformance suite's mock AS): fetch the URL (the last argument) and follow the redirects into
# the loopback callback, so the caller's own callback server receives the code. Bounded: 30 s.
for url; do :; done
case "$url" in
    http://* | https://*) ;;
    *) echo "fetch-browser.sh: the last argument must be an http(s) URL, got '$url'" >&2; exit 2 ;;
esac
exec curl -sS -L --max-redirs 10 --max-time 30 -o /dev/null "$url"
