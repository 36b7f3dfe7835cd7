"""Stage markers from Python: with-block, decorator, and a no-op without the tracer."""
import memstage

with memstage.stage("build"):
    kept = [bytearray(4096) for _ in range(256)]  # 1 MiB retained by the stage


@memstage.stage("decorated")
def temporary():
    return len(bytearray(2 * 1024 * 1024))  # freed before the stage ends


temporary()
print("tracer loaded:", memstage.enabled())
