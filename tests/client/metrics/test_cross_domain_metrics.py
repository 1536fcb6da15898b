"""GSRT and TSR across domain boundaries, on a hand-built cross-domain conversation (expectations by hand)."""

from __future__ import annotations

from shiftbox.metrics import aggregate, compute_run_metrics, simulation_metrics
from shiftbox_servers.kit import combined_state_digest
from tests.client.metrics.build import Builder, action, task

AUTH, CARDS, LOOKUP = "banking__authentication", "banking__cards", "airline__reservation_lookup"


def cross_task(expected=None):
    actions = [action("banking__auth.identify", AUTH, "banking__get_customer_by_phone", {"phone_number": "+1555"}),
               action("banking__cards.lock", CARDS, "banking__lock_card", {"card_id": "card_1"}),
               action("airline__lookup.user", LOOKUP, "airline__get_user_details", {"user_id": "ann_lee_1"})]
    t = task(goals=(AUTH, CARDS, LOOKUP), actions=actions, expected=expected)
    return t.model_copy(update={"domain": "banking,airline"})


def conversation(final=None):
    """Auth, then a shift within banking (to cards: handled at once), then a shift across to the airline that
    the agent answers by handing the customer to a human through the airline's own transfer tool."""
    b = (Builder()
         .user("hi", goal=AUTH)
         .agent("Let me look you up.", calls=[("banking__get_customer_by_phone", {"phone_number": "+1555"})]).tool()
         .agent("You are verified. Anything else?")
         .user("lock my card", goal=CARDS, shift_from=AUTH)                        # shift 1: same domain
         .agent("Locking it now.", calls=[("banking__lock_card", {"card_id": "card_1"})]).tool()  # turn 1
         .agent("Done. Anything else?")
         .user("and my reservations?", goal=LOOKUP, shift_from=CARDS)              # shift 2: crosses domains
         .agent("One moment.")                                                      # turn 1: no ack, no tool
         .agent("Transferring you.", calls=[("airline__transfer_to_human_agents", {"summary": "x"})]).tool())
    trajectory = b.build(reason="agent_transfer", final=None)
    return trajectory.model_copy(update={"domain": "banking,airline", "final_state": final or {}})


def test_gsrt_marks_each_shift_as_crossing_or_not_and_counts_another_domains_transfer():
    sim = simulation_metrics(conversation(), cross_task())
    same, crossed = sim.gsrt
    # shift 1 (banking -> banking): the first turn after it locks the card: ack (a relevant tool), tool and
    # outcome at turn 1
    assert (same.crossed_domains, same.ack, same.tool, same.outcome, same.recovered, same.transferred) == \
        (False, 1, 1, 1, True, False)
    # shift 2 (banking -> airline): "One moment." and "Transferring you." name nothing of the lookup, the
    # transfer is not a lookup tool; airline__transfer_to_human_agents is a transfer: not recovered
    assert (crossed.crossed_domains, crossed.ack, crossed.tool, crossed.outcome, crossed.recovered,
            crossed.transferred) == (True, None, None, None, False, True)


def test_the_run_breaks_shifts_down_by_whether_they_crossed_domains():
    run = aggregate([simulation_metrics(conversation(), cross_task())])
    crossing = run.by_domain_crossing
    assert set(crossing) == {"crossed", "same_domain"}
    assert (crossing["crossed"].gsrt.shifts, crossing["crossed"].gsrt.recovery_rate,
            crossing["crossed"].gsrt.transfer_rate, crossing["crossed"].simulations) == (1, 0.0, 1.0, 1)
    assert (crossing["same_domain"].gsrt.shifts, crossing["same_domain"].gsrt.recovery_rate,
            crossing["same_domain"].gsrt.median_ack, crossing["same_domain"].simulations) == (1, 1.0, 1, 1)
    # overall: 2 shifts, 1 recovered
    assert run.gsrt.shifts == 2 and run.gsrt.recovery_rate == 0.5
    assert "by_domain_crossing" in run.model_dump(mode="json")


def test_single_domain_metrics_carry_no_crossing_fields():
    b = (Builder().user("hi", goal="authentication")
         .agent("Verifying.", calls=[("get_customer_by_phone", {"phone_number": "+1555"})]).tool()
         .user("cards", goal="cards", shift_from="authentication").agent("Locking your card."))
    t = task(goals=("authentication", "cards"))
    run, sims = compute_run_metrics([b.build()], {"t1": t})
    assert sims[0].gsrt[0].crossed_domains is None
    assert "crossed_domains" not in sims[0].gsrt[0].model_dump(mode="json")
    assert run.by_domain_crossing == {} and "by_domain_crossing" not in run.model_dump(mode="json")


def test_state_match_compares_the_combined_digest_of_the_tasks_domains():
    finals = {"banking": "b" * 64, "airline": "a" * 64, "retail": "r" * 64}  # retail: open in the run, not the task's
    expected = combined_state_digest({"banking": "b" * 64, "airline": "a" * 64}, ["banking", "airline"])
    assert simulation_metrics(conversation(finals), cross_task(expected)).tsr.state_match is True
    changed = {**finals, "airline": "c" * 64}
    assert simulation_metrics(conversation(changed), cross_task(expected)).tsr.state_match is False
    missing = {"banking": "b" * 64}
    assert simulation_metrics(conversation(missing), cross_task(expected)).tsr.state_match is None
