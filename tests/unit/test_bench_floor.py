"""The floor comparison (python -m bench.load --floor): rounds alternate ours and the floor, ratios pair each round."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("aiohttp", reason="bench/ needs requirements-dev.txt (the other Pythons' runs install less)")

from bench import floor  # noqa: E402
from bench.load import parse_args  # noqa: E402


def test_pair_statistics_gives_both_medians_their_ratio_each_rounds_ratio_and_the_spread():
    stats = floor.pair_statistics([600.0, 500.0, 900.0, 550.0, 580.0], [300.0, 400.0, 300.0, 250.0, 290.0])
    assert stats["ours_cpu_us_per_call"] == 580.0
    assert stats["theirs_cpu_us_per_call"] == 300.0
    assert stats["ratio"] == round(580.0 / 300.0, 3)
    assert stats["round_ratios"] == [2.0, 1.25, 3.0, 2.2, 2.0]
    assert stats["median_round_ratio"] == 2.0
    assert stats["spread"] == [1.25, 3.0]


def test_a_round_without_a_measurement_is_left_out_of_the_medians_and_the_spread():
    stats = floor.pair_statistics([600.0, None, 400.0], [300.0, 200.0, 400.0])
    assert stats["round_ratios"] == [2.0, None, 1.0]
    assert stats["spread"] == [1.0, 2.0]
    assert stats["ours_cpu_us_per_call"] == 500.0
    assert floor.pair_statistics([None], [None])["spread"] is None


def test_rounds_of_different_lengths_cannot_be_paired():
    with pytest.raises(ValueError, match="paired rounds must match"):
        floor.pair_statistics([1.0, 2.0], [1.0])


def fake_server(name: str):
    return lambda: SimpleNamespace(name=name)


def test_each_round_runs_ours_then_the_floor_on_every_wire_and_pairs_them_by_round(monkeypatch):
    order: list[tuple[str, str]] = []
    cpu = iter([600.0, 300.0, 500.0, 400.0, 900.0, 300.0, 450.0, 300.0])

    def measure(server, wire, args):
        order.append((server.name, wire))
        return {"req_per_s": 100.0, "errors": {}, "server_cpu_us_per_call": next(cpu)}

    monkeypatch.setattr(floor, "our_server", lambda workers, env, tree=None: SimpleNamespace(name="ours"))
    monkeypatch.setattr(floor, "wsgi_floor_server", fake_server("floor"))
    monkeypatch.setattr(floor, "measure", measure)
    args = parse_args(["--floor", "--rounds", "2"])
    report = floor.run_floor(args)
    assert order == [("ours", "stateless"), ("floor", "stateless"), ("ours", "streamable"), ("floor", "streamable")] * 2
    stateless, streamable = report["wires"]["stateless"], report["wires"]["streamable"]
    assert stateless["round_ratios"] == [2.0, 3.0]
    assert streamable["round_ratios"] == [1.25, 1.5]
    assert stateless["cpu_us_per_call_by_round"] == {"ours": [600.0, 900.0], "floor": [300.0, 300.0]}
    assert report["targets"] == {"stateless ours/floor <= 1.5": False, "streamable ours/floor <= 1.5": True}


def test_a_base_tree_runs_between_ours_and_the_floor_and_is_paired_with_both(monkeypatch, tmp_path):
    monkeypatch.setattr(floor, "our_server",
                        lambda workers, env, tree=None: SimpleNamespace(name="base" if tree else "ours"))
    monkeypatch.setattr(floor, "wsgi_floor_server", fake_server("floor"))
    costs = {"ours": 450.0, "base": 500.0, "floor": 300.0}
    monkeypatch.setattr(floor, "measure", lambda server, wire, args: {
        "req_per_s": 1.0, "errors": {}, "server_cpu_us_per_call": costs[server.name]})
    args = parse_args(["--floor", "--rounds", "1", "--transports", "streamable", "--base-tree", str(tmp_path)])
    assert [name for name, _ in floor.sides_of(args)] == ["ours", "base", "floor"]
    row = floor.run_floor(args)["wires"]["streamable"]
    assert row["ratio"] == 1.5
    assert row["base_vs_floor"]["ratio"] == round(500 / 300, 3)
    assert row["ours_vs_base"]["round_ratios"] == [0.9]


def test_the_floor_defaults_to_five_rounds_on_both_wires_and_refuses_legacy_sse():
    args = parse_args(["--floor"])
    assert (args.rounds, args.transports) == (5, "stateless,streamable")
    assert (parse_args(["--compare"]).rounds, parse_args(["--compare"]).transports) == (1, "sse,streamable")
    with pytest.raises(SystemExit, match="no 'sse' wire"):
        floor.run_floor(parse_args(["--floor", "--transports", "sse"]))
