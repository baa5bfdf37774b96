"""A round's claims: how an authorized start becomes one spawn across every machine that
reads the ticket (the rule itself is :mod:`~the_loop.intake.claims`).

A start is recorded (the ledger's command, at most once), begun as a **pending** round
(written to the claim book just before its claim is posted, or when it fails before
that), and decided at once, under the item's hold, so the comments after it
meet the session it started. The reader hands the round its whole batch first
(:meth:`Claiming.note`), so a claim another machine posted after the start is known:

- a winning claim by another machine already seen: lost, without posting;
- otherwise this machine's claim is posted (once: a POST cut short by a crash is looked
  for by its nonce, among the token's own login's claims, before another is sent), the
  thread after the start is read once, and the lowest claim wins; the winner spawns, a
  loser deletes its own claim and records who holds the item.

A claim counts only by the token's own login. GitHub says whose a token is at
``GET /user``, but not for a GitHub App's installation token: such a machine posts its
claim without judging the batch's, and learns its login as the author of the comment
GitHub's answer to that POST named (kept from then on), then decides as any machine
does. A comment is never taken for its claim by the nonce it carries (public once
posted: anyone may write or edit a comment to carry it); when the answer was lost
before the login was known, the claim is posted again under a new nonce, and a copy
GitHub took is then this machine's claim like the other (the lower decides; the
other is deleted).

A round that cannot be decided (GitHub did not answer, this machine's own claim is not
in the thread yet) stays pending and is taken again next cycle: a machine that cannot
read the thread never spawns. A start naming another machine is recorded as held by it
without posting; one naming a machine nobody has seen claiming gets one marked notice,
decided among the machines as a claim is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from the_loop.errors import TheLoopError
from the_loop.intake.claim_ports import ClaimPorts, Holder, PendingClaim
from the_loop.intake.claims import (
    CLAIM,
    NO_MACHINE,
    Claim,
    claim_body,
    claims_for,
    looks_like_claim,
    named_machine,
    no_machine_body,
    read_claim,
    shown_name,
)
from the_loop.intake.events import IssueComment
from the_loop.intake.ports import Action
from the_loop.intake.routing import same_repository
from the_loop.portable.control import CLEANUP, START, STOP
from the_loop.portable.store import CONTROL
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import RoundView

#: The control section's key naming the machine that holds the item (a loser's record).
HELD_BY = "heldBy"
#: How long after its start a claim this machine posted may stay out of the thread
#: before the round is given up as deleted (GitHub shows a comment within seconds).
GONE_AFTER_SECONDS = 600.0


class Claiming:
    """The claims of one repository's round."""

    def __init__(self, round_: RoundView, ports: ClaimPorts) -> None:
        self.round = round_
        self.ports = ports
        #: The claims (and notices) read among this round's comments, by item, start and
        #: kind, lowest first.
        self.seen: dict[tuple[WorkItemRef, int, str], list[Claim]] = {}
        #: The rounds this round has tried to decide already (tried again next cycle).
        self.tried: set[tuple[WorkItemRef, int]] = set()
        self._holders: dict[WorkItemRef, Holder] | None = None
        #: The token's login as this round knows it (None: not known yet; ``""``: GitHub
        #: failed to say, so the batch's claims are not read).
        self._login: str | None = None
        self._asked = False
        #: Claims read while the token's login was not known, judged once it is.
        self._unjudged: list[IssueComment] = []
        #: Claims read that are lower than the one this machine won the same start with
        #: (GitHub had not shown them when it decided): yielded to in :meth:`settle`.
        self.contested: list[tuple[WorkItemRef, Claim]] = []

    # -- while the comments are read ------------------------------------------

    def note(self, comment: IssueComment) -> None:
        """Keep a claim among the comments read (the token's login asked only for one;
        while it is not known, the claim waits to be judged until it is)."""
        if not looks_like_claim(comment):
            return
        login = self._login_for_reading()
        if login is None:
            self._unjudged.append(comment)
            return
        claim = read_claim(comment, own_login=login)
        if claim is None:
            return
        found = self.seen.setdefault((comment.work_item, claim.start, claim.kind), [])
        found.append(claim)
        found.sort(key=lambda c: c.comment_id)
        if claim.kind != CLAIM:
            return
        self._note_machines(comment.work_item, [claim])
        if self._beats_own_win(comment.work_item, claim):
            self.contested.append((comment.work_item, claim))

    def _beats_own_win(self, ref: WorkItemRef, claim: Claim) -> bool:
        """Whether ``claim`` is another machine's, lower than this machine's winning one."""
        holder = self.holders().get(ref)
        return (
            holder is not None
            and not self._mine(claim)
            and holder.machine == self.ports.machine.id
            and holder.start == claim.start
            and holder.comment_id is not None
            and claim.comment_id < holder.comment_id
        )

    def held_elsewhere(self, ref: WorkItemRef, *, fresh: bool = False) -> Holder | None:
        """The other machine holding ``ref``, as this machine last knew it (``fresh``: as
        the claim book says now; the caller holds the item, and the other reader may
        have decided its round since this round began)."""
        if fresh:
            holder = self.ports.book.holders().get(ref)
            if holder is None:
                self.holders().pop(ref, None)
            else:
                self.holders()[ref] = holder
        holder = self.holders().get(ref)
        return holder if holder is not None and holder.machine != self.ports.machine.id else None

    def holders(self) -> dict[WorkItemRef, Holder]:
        if self._holders is None:
            self._holders = dict(self.ports.book.holders())
        return self._holders

    def begin(self, comment: IssueComment) -> None:
        """An authorized start, its command recorded: a pending round (or, when it names
        another machine this one has seen claiming, that machine holds the item)."""
        ref, me = comment.work_item, self.ports.machine
        named = named_machine(comment.body, self.round.intake.settings.policy.grammar) or ""
        kind = CLAIM
        if named and _same_name(named, me.name):
            named = ""
        elif named:
            known = [m for m, n in self._machines(ref).items() if _same_name(n, named)]
            if me.id in known:
                named = ""  # this machine's earlier name: claimed as any start
            elif known:
                self.ports.book.release(ref)  # the item's earlier round, if any, is over
                holder = Holder(comment.id, known[0], shown_name(named))
                self._hold_for(ref, holder, comment.login)
                return
            else:
                kind = NO_MACHINE
        pending = PendingClaim(
            ref, comment.id, comment.created_at, comment.login, self.ports.nonce(), kind, named
        )
        self._decide(pending, fresh=True)  # the caller holds the item

    def _decide(self, pending: PendingClaim, *, fresh: bool = False) -> None:
        """Decide ``pending`` (``fresh``: just begun, in no book yet: written only once a
        claim is about to be posted)."""
        self.tried.add((pending.ref, pending.start))
        try:
            self._settle(pending, fresh=fresh)
        except TheLoopError as error:
            intake = self.round.intake
            book = self.ports.book
            kept = any(p.ref == pending.ref and p.start == pending.start for p in book.pending())
            holder = book.holders().get(pending.ref)
            decided = holder is not None and holder.start == pending.start
            if fresh and not kept and not decided:
                book.begin(pending)  # failed before its claim was posted: kept to try again
            intake.ports.warn(
                f"{pending.ref.ref}: the claim on start {pending.start} is not decided "
                f"yet, and nothing is started until it is: {error}"
            )
            intake.counts.failed.append(f"{pending.ref.ref}: claim: {error}")

    def release(self, ref: WorkItemRef, *, control_too: bool = False) -> None:
        """A stop, a cleanup or a closure ended the item's round: nobody holds it now
        (``control_too``: and the control record's ``heldBy`` goes, which a command's
        new record otherwise replaces)."""
        book = self.ports.book
        held = ref in book.holders()
        if held or any(p.ref == ref for p in book.pending()):
            book.release(ref)
        self.holders().pop(ref, None)
        if held and control_too:
            self.round.intake.ports.ledger.store.update_section(ref, CONTROL, _without_holder)

    def open_rounds(self) -> set[WorkItemRef]:
        """The items with a round here: a holder known, or a claim pending."""
        return {*self.holders(), *(p.ref for p in self.ports.book.pending())}

    # -- once the comments are fed --------------------------------------------

    def settle(self) -> None:
        """Decide each pending round of the repository still open (a crash's, or one
        whose claim was not in the thread yet), each under its item's hold."""
        intake = self.round.intake
        for ref, lower in self.contested:
            with intake.ports.hold(ref):
                if self._beats_own_win(ref, lower):
                    self._yield_to(ref, lower)
        self.contested.clear()
        for pending in self.ports.book.pending():
            if intake.stopping():
                return
            tried = (pending.ref, pending.start) in self.tried
            if tried or not same_repository(pending.ref, self.round.repository):
                continue
            with intake.ports.hold(pending.ref):
                self._decide(pending)

    def _settle(self, pending: PendingClaim, *, fresh: bool) -> None:
        if not fresh:
            still = self._still_pending(pending)
            if still is None:
                return  # decided (or replaced) by the other reader meanwhile
            pending = still
        login = self._own_login()
        if login is not None and self._settled_by_batch(pending, login):
            return
        pending, comments, login = self._posted_and_read(pending, login, fresh=fresh)
        if login is None:  # its own claim, by which the token's login is learned, not shown
            self._not_shown(pending)
            return
        if not fresh and self._superseded(pending, comments, login):
            return
        self._decide_by(pending, comments, login)

    def _decide_by(self, pending: PendingClaim, comments: list[IssueComment], login: str) -> None:
        """Decide ``pending`` by the thread after its start: the lowest claim wins."""
        marked = _marked(comments, pending, login)
        self._note_machines(pending.ref, [c for c in marked if c.kind == CLAIM])
        ours = [c for c in marked if _is_ours(c, pending)]
        copies = [c for c in marked if self._mine(c)]  # its own, and any a lost answer left
        if not ours and marked and not self._mine(marked[0]) and pending.kind == CLAIM:
            self._lost(pending, marked[0], own=copies)  # its own claim gone (a crash's delete)
            return
        if not ours:
            self._not_shown(pending)
            return
        if pending.comment_id is None:
            pending = replace(pending, comment_id=ours[0].comment_id)
            self.ports.book.update(pending)
        if pending.kind == NO_MACHINE:
            self._no_machine(pending, comments, login)
        elif self._mine(marked[0]):
            self._won(pending, marked[0])
            self._delete_own(pending.ref, copies[1:], "extra")
        else:
            self._lost(pending, marked[0], own=copies)

    def _still_pending(self, pending: PendingClaim) -> PendingClaim | None:
        """The book's round for ``pending``'s start, as the book has it now (None: gone)."""
        still = [p for p in self.ports.book.pending() if p.ref == pending.ref]
        return still[0] if still and still[0].start == pending.start else None

    def _superseded(self, pending: PendingClaim, comments: list[IssueComment], login: str) -> bool:
        """Whether the thread moved on past a round a crash left: a later authorized
        start, stop or cleanup, or a claim on a later start. The round is then given up
        (its claim decides nothing any more), and the comments decide, as they are fed."""
        policy = self.round.intake.settings.policy
        later = [c for c in comments if c.id > pending.start and not c.edited]
        moved = any(
            policy.authorized.permits(c.login)
            and policy.grammar.scan(c.body).verb in (START, STOP, CLEANUP)
            for c in later
        ) or any(
            claim is not None and claim.start > pending.start
            for claim in (read_claim(c, own_login=login) for c in later)
        )
        if not moved:
            return False
        self.ports.book.settle(pending.ref, pending.start, None)
        self.holders().pop(pending.ref, None)
        self.round.intake.ports.warn(
            f"{pending.ref.ref}: the claim on start {pending.start} that a crash left "
            "undecided is given up: the ticket moved on since (a later command), so its "
            "comments decide"
        )
        return True

    def _settled_by_batch(self, pending: PendingClaim, login: str) -> bool:
        """Decided by what the reader's batch already held, before this machine posts:
        another machine's winning claim, or (for a notice) another's notice."""
        if pending.posting:
            return False
        seen = self.seen.get((pending.ref, pending.start, CLAIM), [])
        if seen and not self._mine(seen[0]):
            self._lost(pending, seen[0])
            return True
        notices = self.seen.get((pending.ref, pending.start, NO_MACHINE), [])
        if pending.kind == NO_MACHINE and notices:
            self._no_machine(pending, [], login, seen_notice=notices[0])
            return True
        return False

    def _posted_and_read(
        self, pending: PendingClaim, login: str | None, *, fresh: bool
    ) -> tuple[PendingClaim, list[IssueComment], str | None]:
        """This machine's claim posted (once: a POST a crash cut short is looked for by
        its nonce first), then the thread after the start, read once; and the token's
        login (learned from its own claim there when it was not known)."""
        read = self.ports.comments_after
        if pending.comment_id is not None:
            comments = list(read(pending.ref, pending.since))
            return pending, comments, login or self._learned(comments, pending)
        if pending.posting and login is None:
            # The POST's answer was lost before the token's login was known: a comment
            # carrying the claim's nonce cannot be told from a copy (the nonce is public
            # once posted, and anyone may write or edit a comment to carry it), so the
            # claim is posted again under a new nonce, and GitHub's answer names it.
            pending = replace(pending, nonce=self.ports.nonce())
        elif pending.posting:
            comments = list(read(pending.ref, pending.since))
            marked = _marked(comments, pending, login) if login else []
            if any(_is_ours(c, pending) or not self._mine(c) for c in marked):
                return pending, comments, login  # its own claim is there, or another's decides
        pending = self._post(pending, fresh=fresh)
        comments = list(read(pending.ref, pending.since))
        return pending, comments, login or self._learned(comments, pending)

    def _learned(self, comments: list[IssueComment], pending: PendingClaim) -> str | None:
        """The token's login, as the author of this machine's claim among ``comments``,
        kept from now on; None while it is not there. The claim is only ever the comment
        GitHub's answer to its POST named (no comment is taken for it by its marker: the
        nonce is public once posted), and only as a claim counts: never edited, holding
        exactly one well-formed marker, this round's, posted after the start."""
        if pending.comment_id is None:
            return None
        marker = (pending.kind, pending.start, self.ports.machine.id, pending.nonce)
        own = [
            c
            for c in comments
            if c.id == pending.comment_id
            and c.id > pending.start
            and c.created_at >= pending.since
            and (claim := read_claim(c, own_login=c.login)) is not None
            and (claim.kind, claim.start, claim.machine, claim.nonce) == marker
        ]
        if not own:
            return None
        login = own[0].login
        self.ports.learn_login(login)
        self._know(login)
        return login

    def _not_shown(self, pending: PendingClaim) -> None:
        """This machine's claim is not in the thread: GitHub has not shown it yet (the
        round is decided next cycle), or, long after the start, it is gone (deleted by a
        person): the round is given up, and a new start opens another."""
        intake = self.round.intake
        waited = intake.ports.clock() - pending.since.timestamp()
        if pending.comment_id is None or waited < GONE_AFTER_SECONDS:
            return
        self.ports.book.settle(pending.ref, pending.start, None)
        intake.ports.warn(
            f"{pending.ref.ref}: this machine's claim on start {pending.start} (comment "
            f"{pending.comment_id}) is gone from the thread: nothing is started here for "
            "it; a new start opens a new round"
        )
        intake.ports.emit(
            "claim.gone",
            "warning",
            work_item=pending.ref.ref,
            start=pending.start,
            comment_id=pending.comment_id,
        )

    def _post(self, pending: PendingClaim, *, fresh: bool) -> PendingClaim:
        ports, me = self.ports, self.ports.machine
        pending = replace(pending, posting=True)
        (ports.book.begin if fresh else ports.book.update)(pending)
        if pending.kind == NO_MACHINE:
            seen = [*self._machines(pending.ref).values(), me.name]
            body = no_machine_body(
                named=pending.named,
                seen=seen,
                start=pending.start,
                machine=me.id,
                nonce=pending.nonce,
            )
        else:
            body = claim_body(name=me.name, start=pending.start, machine=me.id, nonce=pending.nonce)
        posted = self.round.intake.ports.github.post_comment(pending.ref, body)
        if posted is None:
            return pending  # posted, id unknown: found by its nonce next cycle
        self.round.intake.ports.posted.remember_posted(posted)
        pending = replace(pending, comment_id=posted)
        ports.book.update(pending)
        self.round.intake.ports.emit(
            "claim.posted",
            work_item=pending.ref.ref,
            start=pending.start,
            comment_id=posted,
            kind=pending.kind,
        )
        self.round.intake.ports.checkpoint(f"claim-posted-{pending.start}")
        return pending

    def _won(self, pending: PendingClaim, claim: Claim) -> None:
        """This machine's claim is the lowest: spawn, as the start asked."""
        round_ = self.round
        holder = Holder(
            pending.start, self.ports.machine.id, self.ports.machine.name, claim.comment_id
        )
        round_.intake.ports.checkpoint(f"claim-won-{pending.start}")
        outcome = round_.act(pending.ref, START, pending.actor, pending.start)
        self.ports.book.settle(pending.ref, pending.start, holder)
        self.holders()[pending.ref] = holder
        round_.intake.ports.emit(
            "claim.won",
            work_item=pending.ref.ref,
            start=pending.start,
            comment_id=claim.comment_id,
            outcome=outcome,
        )

    def _lost(self, pending: PendingClaim, winning: Claim, *, own: Sequence[Claim] = ()) -> None:
        """Another machine's claim is the lowest: delete this machine's, record the holder."""
        self._delete_own(pending.ref, own, "losing")
        name = shown_name(winning.name) if winning.name else winning.machine[:12]
        holder = Holder(pending.start, winning.machine, name, winning.comment_id)
        self._hold_for(pending.ref, holder, pending.actor)

    def _delete_own(self, ref: WorkItemRef, claims: Sequence[Claim], why: str) -> None:
        """Delete this machine's ``claims``, each higher than the claim that won (so no
        reader's outcome changes); one GitHub refuses to delete stays, said."""
        for claim in claims:
            try:
                self.ports.delete_comment(ref, claim.comment_id)
            except TheLoopError as error:
                self.round.intake.ports.warn(
                    f"{ref.ref}: could not delete this machine's {why} claim "
                    f"(comment {claim.comment_id}); it decides nothing: {error}"
                )

    def _yield_to(self, ref: WorkItemRef, lower: Claim) -> None:
        """A lower claim than the one this machine won with has shown up late: the rule
        gives the item to its machine, so this machine deletes its claim, holds the item
        as that machine's, ends its session for it (checkouts kept) and says so."""
        intake, own = self.round.intake, self.holders()[ref]
        if own.comment_id is not None:
            try:
                self.ports.delete_comment(ref, own.comment_id)
            except TheLoopError as error:
                intake.ports.warn(
                    f"{ref.ref}: could not delete this machine's claim "
                    f"(comment {own.comment_id}): {error}"
                )
        name = shown_name(lower.name) if lower.name else lower.machine[:12]
        intake.ports.warn(
            f"{ref.ref}: {name}'s claim on start {lower.start} (comment {lower.comment_id}) "
            f"is lower than this machine's (comment {own.comment_id}), which GitHub had not "
            f"shown when this machine took the start: {name} holds the item, and this "
            "machine's session for it ends, its checkouts kept"
        )
        intake.ports.emit(
            "claim.contested",
            "warning",
            work_item=ref.ref,
            start=lower.start,
            machine=lower.machine,
            name=name,
            comment_id=lower.comment_id,
            own_comment_id=own.comment_id,
        )
        holder = Holder(lower.start, lower.machine, name, lower.comment_id)
        self._hold_for(ref, holder, "", action=False)

    def _hold_for(
        self, ref: WorkItemRef, holder: Holder, actor: str, *, action: bool = True
    ) -> None:
        """``holder`` holds ``ref``: kept in the book and the control record, an event, and
        the start's action (held elsewhere)."""
        intake = self.round.intake
        self.ports.book.settle(ref, holder.start, holder)
        self.holders()[ref] = holder
        held = {"machine": holder.machine, "name": holder.name, "start": holder.start}

        def with_holder(current: object) -> dict[str, object]:
            control = dict(cast(dict[str, object], current)) if isinstance(current, dict) else {}
            control[HELD_BY] = held
            return control

        intake.ports.ledger.store.update_section(ref, CONTROL, with_holder)
        self._end_here(ref, holder)
        outcome = f"held by {holder.name}"
        intake.counts.actions.append(
            Action("command", ref.ref, actor, START, holder.start, outcome=outcome)
        )
        intake.ports.emit(
            "claim.lost",
            work_item=ref.ref,
            start=holder.start,
            machine=holder.machine,
            name=holder.name,
            comment_id=holder.comment_id,
        )

    def _end_here(self, ref: WorkItemRef, holder: Holder) -> None:
        """A session of this machine's still live for an item another machine now holds
        is ended, its checkouts kept: one agent per item, never two on one branch."""
        intake, round_ = self.round.intake, self.round
        end_here = intake.ports.end_here
        if end_here is None:
            return
        round_.refresh(ref)  # the other reader may have started it during this round
        if ref not in round_.sessions:
            return
        reason = (
            f"held by {holder.name} (machine {holder.machine[:12]}): its claim won start "
            f"{holder.start}; checkouts kept"
        )
        try:
            end_here(ref, reason)
        except TheLoopError as error:
            intake.counts.failed.append(f"{ref.ref}: ending the session held elsewhere: {error}")
            return
        intake.counts.actions.append(Action("handed", ref.ref, reason=holder.name))
        round_.refresh(ref)

    def _no_machine(
        self,
        pending: PendingClaim,
        comments: list[IssueComment],
        login: str,
        *,
        seen_notice: Claim | None = None,
    ) -> None:
        """The start named a machine nobody had seen: one notice stays (the lowest; one
        already in the batch means this machine posts none); a claim the named machine
        posted meanwhile makes it the holder instead."""
        notices = claims_for(pending.start, comments, own_login=login, kind=NO_MACHINE)
        claims = claims_for(pending.start, comments, own_login=login)
        if seen_notice is not None:
            notices = [seen_notice]
        ours = [n for n in notices if _is_ours(n, pending)]
        kept = bool(ours) and notices[0] is ours[0] and not claims
        if not kept:
            for notice in ours:
                try:
                    self.ports.delete_comment(pending.ref, notice.comment_id)
                except TheLoopError as error:
                    self.round.intake.ports.warn(
                        f"{pending.ref.ref}: could not delete a notice (comment "
                        f"{notice.comment_id}): {error}"
                    )
        if claims:
            winning = claims[0]
            name = shown_name(winning.name) if winning.name else winning.machine[:12]
            holder = Holder(pending.start, winning.machine, name, winning.comment_id)
            self._hold_for(pending.ref, holder, pending.actor)
            return
        self.ports.book.settle(pending.ref, pending.start, None)
        self.holders().pop(pending.ref, None)
        outcome = f"no machine named {shown_name(pending.named)} is known here: nothing started"
        done = Action("command", pending.ref.ref, pending.actor, START, pending.start)
        self.round.intake.counts.actions.append(replace(done, outcome=outcome))
        self.round.intake.ports.emit(
            "claim.unknown_machine",
            "warning",
            work_item=pending.ref.ref,
            start=pending.start,
            named=pending.named,
            notice_posted=kept,
        )

    # -- helpers ---------------------------------------------------------------

    def _mine(self, claim: Claim) -> bool:
        return claim.machine == self.ports.machine.id

    def _own_login(self) -> str | None:
        """The token's own login (None: not known yet, learned from this machine's claim
        once posted); a sentence saying what happened when GitHub failed to say."""
        try:
            login = self.ports.own_login()
        except TheLoopError as error:
            raise TheLoopError(
                f"could not learn whose the token is ({error}); a claim counts only by "
                "the token's own login, so none is decided until GitHub answers (on a "
                "machine alone on its repositories, routing.claim: never claims nothing)"
            ) from error
        if login:
            self._know(login)
        return login or None

    def _login_for_reading(self) -> str | None:
        """The token's login to read the batch's claims by, asked once a round: None
        while not known; ``""`` when GitHub failed to say (claims are not read)."""
        if not self._asked:
            self._asked = True
            try:
                found = self.ports.own_login()
            except TheLoopError as error:
                self.round.intake.ports.warn(f"claims are not read: {error}")
                found = ""
            if found:
                self._know(found)
            else:
                self._login = found
        return self._login

    def _know(self, login: str) -> None:
        """``login`` is the token's: the claims read before it was known are judged."""
        if self._login == login:
            return
        self._login, self._asked = login, True
        waiting, self._unjudged = self._unjudged, []
        for comment in waiting:
            self.note(comment)

    def _machines(self, ref: WorkItemRef) -> dict[str, str]:
        return dict(self.ports.book.machines(_repository(ref)))

    def _note_machines(self, ref: WorkItemRef, claims: list[Claim]) -> None:
        known = self._machines(ref)
        new = {c.machine: shown_name(c.name) for c in claims if c.name and c.machine not in known}
        if new:
            self.ports.book.note_machines(_repository(ref), new)


def _marked(comments: list[IssueComment], pending: PendingClaim, login: str) -> list[Claim]:
    """The claims (or notices) on the pending round's start, lowest first."""
    return claims_for(pending.start, comments, own_login=login, kind=pending.kind)


def _is_ours(claim: Claim, pending: PendingClaim) -> bool:
    """Whether ``claim`` is the pending round's own: by its id, or its nonce before the
    id is known (a POST whose answer was lost)."""
    if pending.comment_id is not None:
        return claim.comment_id == pending.comment_id
    return claim.nonce == pending.nonce


def _without_holder(current: object) -> dict[str, object]:
    control = dict(cast(dict[str, object], current)) if isinstance(current, dict) else {}
    control.pop(HELD_BY, None)
    return control


def _same_name(a: str, b: str) -> bool:
    return shown_name(a).casefold() == shown_name(b).casefold()


def _repository(ref: WorkItemRef) -> str:
    return f"{ref.owner}/{ref.repo}".casefold()
