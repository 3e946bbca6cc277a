"""The member draw (sample.draw) apart from the training seed: the independent unit is a (draw, seed) pair."""

import pytest

from contaminate.study import check_study, sample_pools
from detect.errors import InputError


def _ids(compose_config, *overrides):
    sampled = sample_pools(compose_config("contaminate", ["+dataset=synth_nli", "sample.n_members=10",
                                                          "sample.n_non_members=10", *overrides]))
    return [e.instance_id for e in sampled.members], [e.instance_id for e in sampled.detection["non_members"][0]]


def test_the_draw_follows_the_seed_unless_set_apart(compose_config):
    seed0, seed1 = _ids(compose_config, "seed=0"), _ids(compose_config, "seed=1")
    assert seed0 != seed1
    # draw 1 under training seed 0 draws seed 1's members: today's studies keep their members by default
    assert _ids(compose_config, "seed=0", "sample.draw=1") == seed1
    # and the same draw under another training seed keeps them
    assert _ids(compose_config, "seed=1", "sample.draw=0") == seed0
    assert compose_config("contaminate", ["+dataset=synth_nli", "seed=3"]).sample.draw == 3


@pytest.mark.parametrize("override, message", [("sample.draw=-1", "sample.draw=-1: give a whole number >= 0"),
                                               ("seed=abc", "seed=abc: give a whole number >= 0")])
def test_a_bad_draw_or_seed_is_one_line(compose_config, override, message):
    with pytest.raises(InputError, match=message):
        check_study(compose_config("contaminate", ["+dataset=synth_nli", override]))
