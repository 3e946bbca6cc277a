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


def test_known_non_members_are_a_third_pool_that_leaves_the_draw_as_it_was(compose_config):
    """sample.n_heldout: per split, known non-members disjoint from every pool and sample a cell of it reads; drawing
    them changes neither members nor non-members (so no checkpoint is retrained for them)."""
    base = ["+dataset=synth_nli", "sample.n_members=10", "sample.n_non_members=10"]
    sampled = sample_pools(compose_config("contaminate", [*base, "sample.n_heldout=20"]))
    without = sample_pools(compose_config("contaminate", [*base, "sample.n_heldout=0"]))
    assert [e.instance_id for e in sampled.members] == [e.instance_id for e in without.members]
    assert [e.instance_id for e in sampled.non_members] == [e.instance_id for e in without.non_members]
    main, other = sampled.heldout[sampled.split], sampled.heldout[sampled.other_split]
    assert len(main) == len(other) == 20 and without.heldout[without.split] == []
    assert not {e.instance_id for e in main} & {e.instance_id for e in [*sampled.members, *sampled.non_members]}
    reads = [*sampled.whole["other_split"], *sampled.detection["other_split"][0]]
    assert not {e.instance_id for e in other} & {e.instance_id for e in reads}
