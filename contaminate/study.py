"""A study's design (``plant=none``; conf/plant/none.yaml names it as ``plant.design``): one group of members, trained
in alone for epochs or at counted exposures among a background, read against one group of non-members drawn from the
same split and never trained, with the background alone trained as the control; its five cells are written to the run
folder itself. The stages are contaminate/run.py's ``Run``; a planted run's design is contaminate/planted.py's.

    python -m contaminate +dataset=synth_nli                                        # 5 epochs, members alone
    python -m contaminate +dataset=synth_nli background=offline contaminate.exposures=4   # diluted, counted dose
"""

from __future__ import annotations

from pathlib import Path

from contaminate.controls import BackgroundControl, build_control
from contaminate.regime import study_regime
from contaminate.sampling import STUDY_FIX, GroupDraw, study_groups
from contaminate.stages import Contaminated, GroupResult, GroupView, Layout, RunResult, Setup
from contaminate.study_models import StudyModels
from detect.errors import InputError
from detect.validate import count


class OneGroup:
    """How a study (``plant=none``) trains and reads its groups (contaminate/run.py's ``Run`` runs the stages): its
    members, trained in alone for epochs or at counted exposures among a background (``study_regime``, with a control
    trained on the background alone), against its non-members, never trained; its five cells written to the run
    folder itself. A planted run's design is ``planted.PlantedStream``."""

    fix = STUDY_FIX  # what to lower where the split has too few instances for the pools

    def __init__(self, cfg) -> None:
        """Set up from the run's config; the stages below read what it keeps, never the config."""
        if (cfg.get("plant") or {}).get("groups"):
            raise InputError("plant=none studies one group of members (sample.n_members) and plant.groups is set; "
                             "plant the groups in a planted run (plant=dose_ladder plant.groups=...)")
        for key in ("n_members", "n_non_members"):
            count(cfg.sample[key], f"sample.{key}", hint=" (the study trains members in and holds non-members out)")
        for key in ("n_members", "n_non_members"):
            if cfg.sample.n_detect > cfg.sample[key]:
                raise InputError(f"sample.n_detect={cfg.sample.n_detect} is more than sample.{key}="
                                 f"{cfg.sample[key]}; each cell detects on n_detect of them: lower n_detect or raise "
                                 f"{key}")
        # the clean cells' model: the background alone, trained (the base model without one); plant/control=background
        # is what conf/plant/none.yaml composes (a config without a plant block reads the same)
        node = (cfg.get("plant") or {}).get("control")
        self.control = BackgroundControl() if node is None else build_control(node)
        if not isinstance(self.control, BackgroundControl):
            raise InputError(f"plant/control={self.control.name} is a planted run's control; a study (plant=none) "
                             f"trains the background alone as its control: drop plant/control or plant groups "
                             f"(plant=dose_ladder)")
        members, non_members = study_groups(cfg)
        self.groups, self.pairs = [members, non_members], [(members, non_members)]
        self.never_planted = {cfg.dataset.key: non_members}  # the other split's pool is as large as the non-members'
        # what the lay_out stage reads of the config: the dataset, the contaminate block (the dose: exposures or epochs;
        # max_length), the cells' size, seeds, the format's name
        self.dataset, self.contaminate_cfg, self.seed = cfg.dataset, cfg.contaminate, cfg.seed
        self.n_detect, self.member_draw, self.format_name = cfg.sample.n_detect, cfg.sample.draw, cfg.format.name

    def with_dose(self, cfg):
        """A study trains the dose its config gives (``contaminate.exposures`` or ``epochs``)."""
        return cfg

    def lay_out(self, draw: GroupDraw, tokenizer, setup: Setup, formats: dict, datasets: dict) -> Layout:
        """The study's regime: the members' documents, alone or in a stream among the background, and its control."""
        sampled = draw.study(*self.pairs[0], self.n_detect, self.member_draw)
        regime = study_regime(self.dataset, self.contaminate_cfg, sampled.members, sampled.split, tokenizer,
                              setup.background, setup.format, seed=self.seed)
        return Layout(draw, tokenizer, regime, sampled.members, sampled.split,
                      {g.name: self.format_name for g in self.groups})

    def view(self, layout: Layout, group, x0, template: str | None, contaminated: Contaminated,
             decontamination: dict | None, out_dir: Path) -> GroupView:
        """The one group sees the models as trained; its folder is the run's, so the run's data-side check is its
        summary's (and its report's)."""
        return GroupView(contaminated, out_dir, summary={"decontamination": decontamination} if decontamination else {})

    def finish(self, layout: Layout, contaminated: Contaminated, results: dict[str, GroupResult],
               models: StudyModels, timings: dict, decontamination: dict | None, out_dir: Path, **_) -> RunResult:
        return RunResult(groups={"members": results["members"].summary})  # the one group's summary, as written
