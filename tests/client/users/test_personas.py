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


# -- personas beyond AgentChangeBench: behaviour switches as data -----------------------------------

NEW_KEYS = {"ADVERSARIAL", "EVASIVE", "IMPLICIT_DRIFT"}


def test_catalog_has_the_personas_beyond_agentchangebench():
    assert set(load_personas()) == ACB_KEYS | NEW_KEYS


@pytest.mark.parametrize("key", sorted(ACB_KEYS))
def test_agentchangebench_personas_keep_the_default_switches(key):
    persona = get_persona(key)
    assert persona.announces_shifts is True
    assert persona.answers_after_asks == 1
    assert persona.deflections == ()
    assert persona.policy_push == ()


def test_new_personas_are_defined_by_their_switches():
    adversarial, evasive, drift = (get_persona(k) for k in ("ADVERSARIAL", "EVASIVE", "IMPLICIT_DRIFT"))
    assert len(adversarial.policy_push) >= 2
    assert (adversarial.answers_after_asks, adversarial.announces_shifts) == (1, True)
    assert evasive.answers_after_asks == 2 and len(evasive.deflections) >= 2
    assert (evasive.policy_push, evasive.announces_shifts) == ((), True)
    assert drift.announces_shifts is False and drift.transition_phrases == ()
    assert (drift.answers_after_asks, drift.policy_push) == (1, ())


@pytest.mark.parametrize("key", sorted(NEW_KEYS))
def test_new_personas_have_varied_templates(key):
    persona = get_persona(key)
    for name in (*TEMPLATE_LISTS, "deflections", "policy_push"):
        templates = getattr(persona, name)
        assert len(set(templates)) == len(templates), (key, name)
        if name in TEMPLATE_LISTS and (name != "transition_phrases" or persona.announces_shifts):
            assert len(templates) >= 2, (key, name)


def test_switches_require_their_templates():
    assert Persona.model_validate(_valid(announces_shifts=False, transition_phrases=[])).transition_phrases == ()
    with pytest.raises(ValidationError):
        Persona.model_validate(_valid(transition_phrases=[]))
    with pytest.raises(ValidationError):
        Persona.model_validate(_valid(answers_after_asks=2))
    with pytest.raises(ValidationError):
        Persona.model_validate(_valid(answers_after_asks=0))
    with pytest.raises(ValidationError):
        Persona.model_validate(_valid(answers_after_asks=2, deflections=["Why my {fact}?", "No placeholder."]))
    ok = Persona.model_validate(_valid(answers_after_asks=2, deflections=["Why my {fact}?", "Hmm, {fact}?"]))
    assert ok.answers_after_asks == 2
    with pytest.raises(ValidationError):
        Persona.model_validate(_valid(policy_push=["Skip the checks."]))
    assert len(Persona.model_validate(_valid(policy_push=["Skip the checks.", "Bend the rules."])).policy_push) == 2


def test_llm_prompt_carries_the_switches():
    from shiftbox.users import persona_text

    easy = persona_text(get_persona("EASY_1"))
    assert "How you move to a new topic" in easy
    assert "deflect" not in easy and "push against" not in easy and "never announce" not in easy
    evasive = persona_text(get_persona("EVASIVE"))
    assert "deflect vaguely" in evasive and get_persona("EVASIVE").deflections[0] in evasive
    adversarial = persona_text(get_persona("ADVERSARIAL"))
    assert "push against its rules" in adversarial and get_persona("ADVERSARIAL").policy_push[0] in adversarial
    drift = persona_text(get_persona("IMPLICIT_DRIFT"))
    assert "never announce it" in drift and "How you move to a new topic" not in drift
