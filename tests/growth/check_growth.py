#!/usr/bin/env python3
"""tests/growth: a program that leaks steadily from one site, holds a constant buffer at
another and allocates a one-off burst at a third (tests/growth/growing.cpp) runs ~4 s
under `memstage run`. The report's `growth` must name the leaking site first, at its true
rate within 30 %, and list neither the buffer nor the burst; the text summary must show
it. Same checks as the end-to-end tests (tests/lib/memstage_scenarios.py's Scenario).

With --mode aggregate the same program runs under aggregate mode, snapshots every 20 ms:
the growth comes from the capture's snapshots instead of the events. With --mode sample
it runs sampled at 128 KiB (the 64 KiB leaked blocks are sampled ~40 % of the time): the
growth comes from weighted samples, and the report says it is an estimate and how good
(~8 % here, so 30 % is ~4 standard errors).

usage: check_growth.py --memstage PATH --program PATH --work DIR [--validator PATH] [--mode aggregate|sample]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import Scenario, base_name, format_stack, has_function, user_frames  # noqa: E402


def check(s, program, mode=None):
    truth_path = s.truth_file("growing")
    run_flags = {"aggregate": ("--snapshot-interval", "0.02"), "sample": ("--sample-rate", "131072")}.get(mode, ())
    out, report = s.traced("run", [program, truth_path], mode=mode, run_flags=run_flags)
    truth = s.read_truth("growing")
    growth = report["growth"]
    snapshots = report["growth_snapshots"]
    if not s.check(isinstance(growth, list) and snapshots, "growth measured in full mode"):
        return
    print("growth: %d snapshots %.3f s apart; %d growing stacks" % (snapshots["count"], snapshots["interval_s"],
                                                                    len(growth)))
    for g in growth:
        print("  %.0f B/s, %d live, since %.2f s, R2 %.3f\n%s" % (g["bytes_per_s"], g["live_bytes"], g["since_s"],
                                                                  g["r_squared"], format_stack(g["stack"], 6)))
    # Between 128 and 256 snapshots are held whatever the run's length (aggregate mode: the
    # capture's, one per 20 ms of its ~4 s, thinned to 256 at most).
    low = 64 if mode == "aggregate" else 128
    s.check(low <= snapshots["count"] <= 256, "snapshots held: expected %d..256, got %d" % (low, snapshots["count"]))
    if not s.check(growth, "growth lists the leaking site"):
        return
    first = growth[0]
    top = user_frames(first["stack"])
    s.check(top and base_name(top[0].get("function")) == "leak_step",
            "growth[0] is leak_step's stack, got:\n" + format_stack(first["stack"]))
    if top:
        s.eq(top[0].get("line"), truth["leak_line"], "growth[0]: the leak's source line")
    rate, true_rate = first["bytes_per_s"], truth["leak_bytes_per_s"]
    s.check(abs(rate - true_rate) <= 0.3 * true_rate,
            "growth[0].bytes_per_s %.0f within 30 %% of the true %d (%.1f %% off)"
            % (rate, true_rate, 100.0 * (rate - true_rate) / true_rate))
    print("leak rate: reported %.0f B/s, true %d B/s (%.1f %% off)"
          % (rate, true_rate, 100.0 * (rate - true_rate) / true_rate))
    if mode == "sample":
        # Estimates, and said so: each rate with its expected error, the note in words.
        error = first.get("relative_standard_error")
        s.check(error is not None and 0 < error < 0.3, "growth[0].relative_standard_error: %r" % error)
        s.check("estimate" in snapshots.get("estimate_note", ""), "growth_snapshots.estimate_note: %r"
                % snapshots.get("estimate_note"))
        s.check("growth" in report["sampling"]["estimated"], "sampling.estimated lists growth")
        s.check(abs(first["live_bytes"] - truth["leaked_bytes"]) <= 0.3 * truth["leaked_bytes"],
                "growth[0].live_bytes %d within 30 %% of the %d leaked" % (first["live_bytes"], truth["leaked_bytes"]))
    else:
        s.check(all("relative_standard_error" not in g for g in growth) and "estimate_note" not in snapshots,
                "exact growth carries no error")
        s.eq(first["live_bytes"], truth["leaked_bytes"], "growth[0].live_bytes: everything leak_step leaked")
    for name in ("hold_buffer", "burst", "churn"):
        listed = [g for g in growth if has_function(g["stack"], name)]
        s.check(not listed, "growth lists %s's stack (%s)" % (name, "a constant buffer" if name == "hold_buffer"
                                                              else "a one-off burst" if name == "burst" else "churn"))
    series = first["series"]
    s.eq(len(series["t_s"]), snapshots["count"], "growth[0].series: a point per snapshot")

    text = s.run([s.memstage, "report", out, "--format", "text"])
    body = text.stdout.decode(errors="replace")
    s.check("growing over time" in body and "leak_step" in body.split("growing over time", 1)[-1],
            "the text summary lists leak_step under 'growing over time'")
    if mode == "sample":
        growing = body.split("growing over time", 1)[-1]
        s.check("estimates" in growing and "/s ± " in growing, "the text summary gives the rates' error")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memstage", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--validator")
    parser.add_argument("--mode", choices=("full", "aggregate", "sample"), default="full")
    args = parser.parse_args()
    args.programs = os.path.dirname(os.path.abspath(args.program))
    s = Scenario(args)
    return s.run_scenario(lambda s: check(s, os.path.abspath(args.program), None if args.mode == "full" else args.mode))


if __name__ == "__main__":
    sys.exit(main())
