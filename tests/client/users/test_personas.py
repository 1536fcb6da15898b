"""The persona catalog: the five AgentChangeBench personas as valid, varied data."""

from __future__ import annotations

from importlib import resources

import pytest
from pydantic import ValidationError

from shiftbox.users import Persona, get_persona, load_personas

ACB_KEYS = {"EASY_1", "EASY_2", "MEDIUM_1", "MEDIUM_2", "HARD_1"}
TEMPLATE_LISTS = ("openers", "transition_phrases", "confirmations", "info_prefixes", "dont_know",
                  "nudges", "closings")


def test_catalog_has_the_five_agentchangebench_personas():
    personas = load_personas()
    assert set(personas) >= ACB_KEYS
    assert all(key == p.key for key, p in personas.items())


def test_catalog_file_ships_beside_the_module():
    assert resources.files("shiftbox.users").joinpath("personas.json").is_file()


@pytest.mark.parametrize("key", sorted(ACB_KEYS))
def test_every_template_list_has_several_distinct_entries(key):
    persona = get_persona(key)
    for name in TEMPLATE_LISTS:
        templates = getattr(persona, name)
        assert len(templates) >= 2, (key, name)
        assert len(set(templates)) == len(templates), (key, name)


def test_default_persona_is_easy_1():
    assert get_persona(None).key == "EASY_1"


def test_unknown_persona_names_the_known_ones():
    with pytest.raises(KeyError) as info:
        get_persona("NOPE_9")
    message = str(info.value)
    assert "NOPE_9" in message
    assert all(key in message for key in ACB_KEYS)


def test_traits_follow_the_reference_descriptions():
    assert get_persona("MEDIUM_1").disclosure == "all_at_once"
    assert get_persona("EASY_1").disclosure == "when_asked"
    assert get_persona("HARD_1").cooperation == "low"
    assert get_persona("MEDIUM_1").verbosity == "terse"
    assert any(t.startswith("Oh wait") for t in get_persona("EASY_2").transition_phrases)


def test_load_personas_returns_a_fresh_dict():
    first = load_personas()
    first.pop("EASY_1")
    assert "EASY_1" in load_personas()


def _valid(**changes) -> dict:
    data = get_persona("EASY_1").model_dump()
    data.update(changes)
    return data


def test_persona_model_rejects_bad_data():
    assert Persona.model_validate(_valid()).key == "EASY_1"
    with pytest.raises(ValidationError):
        Persona.model_validate(_valid(openers=["only one"]))
    with pytest.raises(ValidationError):
        Persona.model_validate(_valid(disclosure="sometimes"))
    with pytest.raises(ValidationError):
        Persona.model_validate(_valid(dont_know=["no placeholder", "none here"]))
    with pytest.raises(ValidationError):
        Persona.model_validate(_valid(mood="grumpy"))
