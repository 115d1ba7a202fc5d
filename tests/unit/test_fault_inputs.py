"""Every registered family gives the hostile-input harness its FaultInputs (benchmarks/faults.py
iterates the registry and reads them: a family without one would have no cases), and the record
refuses what would leave the harness nothing to run."""

from __future__ import annotations

import pytest

from attnkit.families import FAMILIES
from attnkit.families.fault_inputs import FaultInputs


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_registered_family_gives_its_fault_inputs(name):
    family = FAMILIES[name]
    inputs = family.fault_inputs()
    assert isinstance(inputs, FaultInputs), f"{family.package}.{family.faults} is no FaultInputs"
    model = family.model_class()
    for method in inputs.calls:
        assert callable(getattr(model, method, None)), f"{name}: no API method {method!r}"
    if inputs.experiment is not None:
        assert inputs.experiment.get("family") == name
        family.summary(inputs.experiment)  # a mapping the family reads
    if inputs.request is not None:
        assert family.endpoint is not None, f"{name}: a request, but no server endpoint"
    for command in inputs.commands:
        assert "{model}" in command, f"{name}: {command} does not name the model"


def test_a_record_names_only_its_own_files_and_has_a_model():
    with pytest.raises(ValueError, match="not among files"):
        FaultInputs(experiment={}, files={"a.tsv": ""}, data_files=("b.tsv",))
    with pytest.raises(ValueError, match="experiment to train or a checkpoint"):
        FaultInputs()
    assert FaultInputs(checkpoint="faults:make").resumes is False


def test_data_files_of_a_made_checkpoint_need_a_command_naming_them():
    files = {"a.wav": b"RIFF"}
    with pytest.raises(ValueError, match="need a command"):
        FaultInputs(checkpoint="faults:make", files=files, data_files=("a.wav",))
    command = (("plot", "--model", "{model}", "a.wav"),)
    FaultInputs(checkpoint="faults:make", files=files, data_files=("a.wav",), commands=command)


@pytest.mark.parametrize("name", ["speech", "vision"])
def test_the_families_read_from_files_have_data_file_cases(name):
    inputs = FAMILIES[name].fault_inputs()
    assert inputs.data_files and all(f in inputs.commands[0] for f in inputs.data_files)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_family_trained_by_attnkit_train_has_resume_cases(name):
    """kill -9, SIGTERM and a full disk, then --resume, for every family ``attnkit train``
    trains (the pretrained family alone is not trained here)."""
    inputs = FAMILIES[name].fault_inputs()
    assert inputs.resumes == (inputs.experiment is not None)
    assert (inputs.experiment is None) == (name == "hf")
