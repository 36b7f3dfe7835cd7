"""`memstage run --serve` (harness/serve, docs/serving.md): a service whose memory it knows
(leaky_service.cpp) scraped while it runs, and the endpoint's limits. Each scenario is test
serve.NAME (tests/lib/memstage_scenarios.py)."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import MIB, SKIP, Scenarios  # noqa: E402

scenarios = Scenarios(default_timeout_s=180)
scenario = scenarios.register

HELD_BYTES = 32 * MIB  # leaky_service.cpp's kHeldBlocks x kBlockBytes
NOMINAL_LEAK_BYTES_PER_S = 64 * 1024 * 50  # leaky_service.cpp's kLeakBytes every kLeakPeriodMs
RUNTIME_SLACK_BYTES = MIB  # what the C and C++ runtimes hold besides (stdio, the emergency pool)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, condition, timeout_s=60):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("gave up waiting for " + what)


def get(url, token=None, timeout_s=10, method="GET"):
    """(status, headers, body) of one request."""
    request = urllib.request.Request(url, method=method)
    if token is not None:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def parse_metrics(text):
    """{(name, frozenset of labels): value} and {name: TYPE} of the families."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-z_]+)\{(.*)\} (\S+)', line)
        if not m:
            raise AssertionError("not a sample line: %r" % line)
        labels = frozenset(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples, types


def values(samples, name, **labels):
    return [v for (n, ls), v in samples.items() if n == name and all((k, str(x)) in ls for k, x in labels.items())]


class Service:
    """leaky_service under `memstage run --serve 127.0.0.1:PORT RUN_FLAGS`, its files in WORK/NAME."""
    def __init__(self, s, name, run_flags=(), port=None):
        self.s = s
        self.dir = os.path.join(s.work, "service." + name)
        os.makedirs(self.dir)
        self.port = port or free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.files = {f: os.path.join(self.dir, f) for f in ("ready", "go", "stop", "rate")}
        self.argv = [s.memstage, "run", "-o", os.path.join(self.dir, "out"), "--serve", str(self.port)] + list(run_flags)
        self.argv += ["--", s.program("leaky_service")] + [self.files[f] for f in ("ready", "go", "stop", "rate")]
        print("$ " + " ".join(self.argv), flush=True)
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def ready(self):
        wait_for("the service's held blocks", lambda: os.path.exists(self.files["ready"]) or self.proc.poll() is not None)
        if self.proc.poll() is not None:
            raise AssertionError("memstage ended early: %r" % self.proc.stderr.read())

    def metrics(self, token=None):
        status, headers, body = get(self.base + "/metrics", token)
        return status, headers, body.decode()

    def settled_metrics(self, least_live_bytes):
        """The metrics once the analysis has seen at least LEAST_LIVE_BYTES live."""
        def enough():
            status, _, text = self.metrics()
            if status != 200:
                return None
            samples, _ = parse_metrics(text)
            live = values(samples, "memstage_heap_live_bytes")
            return (samples, text) if live and max(live) >= least_live_bytes else None
        return wait_for("memstage_heap_live_bytes >= %d" % least_live_bytes, enough)

    def finish(self, leak_s=0.0):
        """GO, LEAK_S seconds of leaking, STOP: the leak's own rate (bytes/s) and memstage's exit status."""
        open(self.files["go"], "w").close()
        time.sleep(leak_s)
        open(self.files["stop"], "w").close()
        out, err = self.proc.communicate(timeout=120)
        self.stdout, self.stderr = out.decode(errors="replace"), err.decode(errors="replace")
        rate = float(open(self.files["rate"]).read()) if os.path.exists(self.files["rate"]) else None
        return rate, self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def go_pprof_top(s, url, sample_index):
    """`go tool pprof -top` of URL in bytes, as lines; None without go."""
    go = shutil.which("go")
    if not go:
        return None
    env = dict(os.environ, PPROF_TMPDIR=s.work, HOME=s.work, GOCACHE=os.path.join(s.work, "gocache"))
    proc = s.run([go, "tool", "pprof", "-top", "-unit=bytes", "-sample_index=" + sample_index, url], env=env, timeout=120)
    s.eq(proc.returncode, 0, "go tool pprof -top %s: %s" % (url, proc.stderr.decode(errors="replace")[-400:]))
    return proc.stdout.decode(errors="replace").splitlines()


def flat_bytes(lines, function):
    """The flat bytes pprof's -top gives the line naming FUNCTION."""
    for line in lines or []:
        if line.rstrip().endswith(function):
            return int(re.match(r"\d+", line.split()[0]).group(0))
    return None


@scenario
def scenario_figures(s):
    """/metrics, /debug/pprof/heap and /allocs, /report.json and / while the service runs: the
    figures it knows"""
    service = Service(s, "figures", run_flags=["--ram-limit", "4GiB", "--ram-limit-action", "record"])
    try:
        service.ready()
        samples, text = service.settled_metrics(HELD_BYTES)
        check_metrics(s, service, samples, text)
        check_pprof_heap(s, service)
        check_pages(s, service)
        rate, status = service.finish(leak_s=2.0)
    finally:
        service.kill()
    s.eq(status, 0, "memstage's exit status once the service ended")
    s.check("serving the run so far at %s/" % service.base in service.stderr,
            "memstage says where it serves: %r" % service.stderr[:300])
    s.check(rate and rate > 0, "the service leaked at %s bytes/s" % rate)
    s.check(re.fullmatch(r"leaky_service: leaked \d+ bytes\n", service.stdout),
            "memstage's stdout is the service's line alone: %r" % service.stdout)
    with socket.socket() as c:
        s.check(c.connect_ex(("127.0.0.1", service.port)) != 0, "nothing listens once the program has ended")


def check_metrics(s, service, samples, text):
    _, headers, _ = service.metrics()
    s.eq(headers.get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8", "/metrics's content type")
    _, types = parse_metrics(text)
    for name, kind in [("memstage_heap_live_bytes", "gauge"), ("memstage_heap_peak_bytes", "gauge"),
                       ("memstage_rss_bytes", "gauge"), ("memstage_allocations_total", "counter"),
                       ("memstage_allocated_bytes_total", "counter"), ("memstage_stage_peak_heap_bytes", "gauge"),
                       ("memstage_growth_bytes_per_second", "gauge"), ("memstage_tracer_bytes", "gauge"),
                       ("memstage_lost_events_total", "counter")]:
        s.eq(types.get(name), kind, "TYPE of " + name)
        s.check("# HELP %s " % name in text, "HELP of " + name)
    live = values(samples, "memstage_heap_live_bytes", command=service.argv[-5] + " " + " ".join(service.argv[-4:]))
    s.eq(len(live), 1, "one memstage_heap_live_bytes series labelled with the service's command")
    live = live[0] if live else 0
    print("memstage_heap_live_bytes %d (held %d)" % (live, HELD_BYTES), flush=True)
    s.check(HELD_BYTES <= live <= HELD_BYTES + RUNTIME_SLACK_BYTES,
            "memstage_heap_live_bytes %d: the %d bytes held, and at most 1 MiB of the runtime's" % (live, HELD_BYTES))
    peak = values(samples, "memstage_heap_peak_bytes")
    s.check(peak and peak[0] >= live, "memstage_heap_peak_bytes %s >= live %d" % (peak, live))
    stage = values(samples, "memstage_stage_peak_heap_bytes", stage="warm_up")
    s.check(stage and HELD_BYTES <= stage[0] <= HELD_BYTES + RUNTIME_SLACK_BYTES,
            "memstage_stage_peak_heap_bytes{stage=\"warm_up\"} %s: the held blocks" % stage)
    allocations = values(samples, "memstage_allocations_total")
    s.check(allocations and allocations[0] >= 32, "memstage_allocations_total %s >= the 32 held" % allocations)
    allocated = values(samples, "memstage_allocated_bytes_total")
    s.check(allocated and allocated[0] >= HELD_BYTES, "memstage_allocated_bytes_total %s" % allocated)
    rss = values(samples, "memstage_rss_bytes")
    s.check(rss and rss[0] >= HELD_BYTES, "memstage_rss_bytes %s >= the held blocks (touched)" % rss)
    s.check(values(samples, "memstage_tracer_bytes")[0] > 0, "memstage_tracer_bytes is the tracer's memory")
    s.eq(values(samples, "memstage_lost_events_total"), [0.0], "memstage_lost_events_total")
    s.eq(values(samples, "memstage_ram_limit_bytes"), [float(4 << 30)], "memstage_ram_limit_bytes: --ram-limit 4GiB")


def check_pprof_heap(s, service):
    status, headers, body = get(service.base + "/debug/pprof/heap")
    s.eq(status, 200, "/debug/pprof/heap's status")
    s.eq(body[:2], b"\x1f\x8b", "/debug/pprof/heap is gzipped, as pprof expects")
    top = go_pprof_top(s, service.base + "/debug/pprof/heap", "inuse_space")
    if top is None:
        print("go is missing: the heap profile is not read by go tool pprof", flush=True)
        return
    s.eq(flat_bytes(top, "hold_blocks"), HELD_BYTES,
         "go tool pprof -top: inuse_space of hold_blocks\n" + "\n".join(top[:15]))
    top = go_pprof_top(s, service.base + "/debug/pprof/allocs", "alloc_objects")
    s.eq(flat_bytes(top, "hold_blocks"), 32, "go tool pprof -top /allocs: alloc_objects of hold_blocks")


def check_pages(s, service):
    status, headers, body = get(service.base + "/report.json")
    s.eq(status, 200, "/report.json's status")
    report = json.loads(body)
    s.check(isinstance(report, dict) and report.get("processes"), "/report.json is a report with processes")
    status, headers, body = get(service.base + "/")
    s.eq(status, 200, "/'s status")
    s.check(body.lstrip().lower().startswith(b"<!doctype html"), "/ is the report page")
    s.eq(get(service.base + "/metrics", method="POST")[0], 405, "POST /metrics")
    s.eq(get(service.base + "/metrics", method="DELETE")[0], 405, "DELETE /metrics")
    s.eq(get(service.base + "/nothing-here")[0], 404, "GET of a path not served")


@scenario
def scenario_token(s):
    """--serve-token: a request without the token, or with another, is refused; with it, answered"""
    token_file = os.path.join(s.work, "token")
    with open(token_file, "w") as f:
        f.write("s3cret-token\n")
    service = Service(s, "token", run_flags=["--serve-token", token_file])
    try:
        service.ready()
        s.eq(service.metrics()[0], 401, "/metrics without a token")
        s.eq(service.metrics("wrong")[0], 401, "/metrics with another token")
        s.eq(service.metrics("s3cret-token-and-more")[0], 401, "/metrics with the token and more")
        s.eq(service.metrics("s3cret-toke")[0], 401, "/metrics with part of the token")
        s.eq(get(service.base + "/debug/pprof/heap")[0], 401, "/debug/pprof/heap without a token")
        status = wait_for("an answer with the token", lambda: service.metrics("s3cret-token")[0] == 200 or None)
        s.check(status, "/metrics with the token is answered")
        service.finish()
    finally:
        service.kill()


def refused_before_start(s, name, run_flags, contains):
    """memstage run with RUN_FLAGS fails in one line containing CONTAINS, the program never started."""
    ready = os.path.join(s.work, name + ".ready")
    argv = [s.memstage, "run", "-o", os.path.join(s.work, name)] + list(run_flags)
    argv += ["--", s.program("leaky_service"), ready, ready, ready, ready]
    proc = s.run(argv, timeout=60)
    s.check(proc.returncode != 0, "%s: exit status %d is not 0" % (name, proc.returncode))
    s.one_line_error(proc, name, contains)
    s.check(not os.path.exists(ready), "%s: the program never started" % name)
    s.check(not os.path.exists(os.path.join(s.work, name)), "%s: no run folder left behind" % name)


@scenario
def scenario_bad_input(s):
    """A port in use, a bad address, a token file that cannot be read: one line, exit 2, no run"""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        refused_before_start(s, "in_use", ["--serve", str(port)], "127.0.0.1:%d: cannot listen there" % port)
    refused_before_start(s, "bad_port", ["--serve", "99999"], "--serve takes PORT or HOST:PORT")
    refused_before_start(s, "bad_host", ["--serve", "no.such.host.invalid:9100"], "cannot listen there")
    refused_before_start(s, "ipv6_unbracketed", ["--serve", "::1:9100"], "in brackets")
    refused_before_start(s, "no_token_file", ["--serve", "0", "--serve-token", os.path.join(s.work, "absent")],
                         "--serve-token")
    empty = os.path.join(s.work, "empty_token.txt")
    open(empty, "w").close()
    refused_before_start(s, "empty_token", ["--serve", "0", "--serve-token", empty], "no token")
    refused_before_start(s, "token_alone", ["--serve-token", empty], "--serve-token needs --serve")


@scenario
def scenario_limits(s):
    """Clients that send nothing, one that never reads, 200 at once: the others are answered"""
    service = Service(s, "limits")
    try:
        service.ready()
        service.settled_metrics(HELD_BYTES)
        silent = [socket.create_connection(("127.0.0.1", service.port)) for _ in range(3)]
        start = time.monotonic()
        status, _, _ = service.metrics()
        s.eq(status, 200, "/metrics beside 3 silent connections")
        s.check(time.monotonic() - start < 1.5, "answered in %.2f s beside 3 silent connections" % (time.monotonic() - start))
        silent[0].settimeout(10)
        start = time.monotonic()
        closed = silent[0].recv(1) == b""
        s.check(closed and time.monotonic() - start < 5, "a silent connection is closed by the server within 5 s")
        open(service.files["go"], "w").close()  # the service's paced loop runs beside what follows
        never_reads = never_reading_client(service.port)
        results = concurrent_gets(service.base + "/metrics", 200)
        s.eq(sum(1 for r in results if r == 200), 200, "200 requests at once all answered (%s)" % sorted(set(results)))
        for c in silent + [never_reads]:
            c.close()
        rate, status = service.finish()
        s.eq(status, 0, "memstage's exit status")
        # The service's own loop (64 KiB every 20 ms: 3.3 MB/s asleep on time) kept its pace
        # beside the requests: the server's threads are memstage's, not the service's.
        print("the service's leak rate beside the requests: %s bytes/s" % rate, flush=True)
        s.check(rate and rate > 0.5 * NOMINAL_LEAK_BYTES_PER_S,
                "the service's pace, %s bytes/s, is over half its nominal %d" % (rate, NOMINAL_LEAK_BYTES_PER_S))
    finally:
        service.kill()


def never_reading_client(port):
    """A connection that asks for the report page, many times over, and never reads the answers."""
    c = socket.create_connection(("127.0.0.1", port))
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 50)
    return c


def concurrent_gets(url, n):
    results = [None] * n

    def one(i):
        try:
            results[i] = get(url, timeout_s=30)[0]
        except Exception as e:  # noqa: BLE001 - the failure is what the test reports
            results[i] = repr(e)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@scenario(timeout_s=300)
def scenario_attach(s):
    """memstage attach --serve on a service already running: what it leaks from then on is served,
    go tool pprof names the leak, and the service runs on after memstage detaches"""
    work = os.path.join(s.work, "service")
    os.makedirs(work)
    files = [os.path.join(work, f) for f in ("ready", "go", "stop", "rate")]
    service = subprocess.Popen([s.program("leaky_service")] + files)
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    memstage = None
    try:
        wait_for("the service's held blocks", lambda: os.path.exists(files[0]))
        argv = [s.memstage, "attach", str(service.pid), "-o", os.path.join(s.work, "out"), "--mode", "sample",
                "--serve", str(port)]
        print("$ " + " ".join(argv), flush=True)
        memstage = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for("an answer from the attached tracer", lambda: try_status(base + "/metrics") == 200, timeout_s=180)
        open(files[1], "w").close()
        first = wait_for("a heap growing", lambda: live_now(base))
        time.sleep(4)
        s.check(live_now(base) > first, "memstage_heap_live_bytes grows as the service leaks (%d first)" % first)
        top = go_pprof_top(s, base + "/debug/pprof/heap", "inuse_space")
        if top is not None:
            line = next((line for line in top if re.match(r"\s*\d+B ", line)), "")
            s.check(line.rstrip().endswith("leak_steadily"), "go tool pprof -top's first line names leak_steadily: %r" % line)
        memstage.send_signal(2)  # Ctrl-C: detach
        _, err = memstage.communicate(timeout=180)
        s.eq(memstage.returncode, 0, "memstage attach's exit status: %s" % err.decode(errors="replace")[-300:])
        s.check(service.poll() is None, "the service runs on after memstage detached")
        open(files[2], "w").close()
        s.eq(service.wait(timeout=60), 0, "the service's own exit status")
    finally:
        for p in (memstage, service):
            if p and p.poll() is None:
                p.kill()
                p.wait()


def try_status(url):
    try:
        return get(url, timeout_s=5)[0]
    except OSError:
        return None


def live_now(base):
    status, _, body = get(base + "/metrics")
    live = values(parse_metrics(body.decode())[0], "memstage_heap_live_bytes") if status == 200 else []
    return int(max(live)) if live and max(live) > 0 else None


PROMETHEUS_CONFIG = """global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: memstage
    scrape_interval: 1s
    scrape_timeout: 900ms
    static_configs:
      - targets: ['127.0.0.1:%d']
"""


class Prometheus:
    """Debian's prometheus scraping 127.0.0.1:TARGET_PORT every second, its storage in WORK."""
    def __init__(self, s, binary, target_port):
        folder = os.path.join(s.work, "prometheus")
        os.makedirs(folder)
        config = os.path.join(folder, "prometheus.yml")
        with open(config, "w") as f:
            f.write(PROMETHEUS_CONFIG % target_port)
        self.base = "http://127.0.0.1:%d" % free_port()
        argv = [binary, "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(folder, "data"),
                "--web.listen-address=" + self.base[len("http://"):]]
        print("$ " + " ".join(argv), flush=True)
        self.log = open(os.path.join(folder, "log"), "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log)
        wait_for("prometheus ready", lambda: self.answers("/-/ready"))

    def answers(self, path):
        try:
            return get(self.base + path, timeout_s=2)[0] == 200
        except OSError:
            return False

    def query(self, expression):
        """The value of EXPRESSION's first series now, or None."""
        status, _, body = get(self.base + "/api/v1/query?" + urllib.parse.urlencode({"query": expression}))
        result = json.loads(body)["data"]["result"] if status == 200 else []
        return float(result[0]["value"][1]) if result else None

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


@scenario(timeout_s=240, may_skip=True)
def scenario_prometheus(s):
    """A real Prometheus scraping a leaking service in sample mode every second: the heap it
    stores and deriv() of it against the leak's own rate; go tool pprof names the leak"""
    binary = shutil.which("prometheus")
    if not binary:
        print("SKIP: prometheus is not installed (scripts/setup.sh installs Debian's)")
        sys.exit(SKIP)
    service = Service(s, "prometheus", run_flags=["--mode", "sample"])
    prometheus = None
    try:
        service.ready()
        service.settled_metrics(HELD_BYTES)
        prometheus = Prometheus(s, binary, service.port)
        stored = wait_for("a scraped heap", lambda: prometheus.query("memstage_heap_live_bytes"))
        s.check(HELD_BYTES <= stored <= HELD_BYTES + RUNTIME_SLACK_BYTES,
                "memstage_heap_live_bytes in Prometheus: %d, the held %d bytes" % (stored, HELD_BYTES))
        open(service.files["go"], "w").close()
        time.sleep(25)
        deriv = prometheus.query("deriv(memstage_heap_live_bytes[20s])")
        top = go_pprof_top(s, service.base + "/debug/pprof/heap", "inuse_space")
        rate, status = service.finish()
    finally:
        service.kill()
        if prometheus:
            prometheus.stop()
    s.eq(status, 0, "memstage's exit status")
    print("Prometheus: stored heap %s bytes; deriv(memstage_heap_live_bytes[20s]) %s bytes/s, the leak's own %s"
          % (stored, deriv, rate), flush=True)
    s.check(deriv is not None and rate and abs(deriv - rate) <= 0.25 * rate,
            "deriv(memstage_heap_live_bytes[20s]) %s bytes/s within 25 %% of the leak's own %s" % (deriv, rate))
    if top is not None:
        first = next((line for line in top if re.match(r"\s*\d+B ", line)), "")
        s.check(first.rstrip().endswith("leak_steadily"),
                "go tool pprof -top's first line names leak_steadily: %r" % first)


if __name__ == "__main__":
    sys.exit(scenarios.main("serve", "memstage run --serve"))
