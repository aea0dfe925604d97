"""/api/v1/me: who the token belongs to (user, team, admin), for clients such as the chat UI."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from api.deps import IdentityDep

router = APIRouter(tags=["identity"])


class MePublic(BaseModel):
    """The caller, as resolved from the bearer token."""

    user: str
    team: str
    admin: bool


@router.get("/me", response_model=MePublic)
def me(who: IdentityDep) -> MePublic:
    """The user, team and admin flag of the token in `Authorization` (401 when it is not valid)."""
    return MePublic(user=who.user, team=who.team, admin=who.is_admin)
