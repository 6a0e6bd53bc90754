# A STUB: a server a compromised guest would name as its registry, for tests/deploy/t-trust.sh.
# It is no registry: every request is logged (METHOD PATH, and "auth" when it carried an
# Authorization header, "noauth" when not) and answered 401 with a Basic challenge, the answer
# that makes a client send the credentials it holds.
#   python3 capture-stub.py ADDR PORT PIDFILE LOGFILE
import os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ADDR, PORT, PIDFILE, LOGFILE = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


class Capture(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def route(self):
        with open(LOGFILE, "a") as f:
            f.write("%s %s %s\n" % (self.command, self.path, "auth" if self.headers.get("Authorization") else "noauth"))
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="capture"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD = do_PUT = do_POST = route


srv = ThreadingHTTPServer((ADDR, PORT), Capture)
srv.daemon_threads = True
with open(PIDFILE + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(PIDFILE + ".tmp", PIDFILE)
srv.serve_forever()
