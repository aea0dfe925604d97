"""/api/v1/secrets: the caller's own secrets (API keys, tokens), set and removed by name and listed without
their values. A task names the ones its job gets (`secrets` in its spec); nobody reads a value back."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, status
from pydantic import BaseModel, Field, field_validator

from api.deps import ClusterDep, IdentityDep
from scheduler.errors import SpecError
from scheduler.spec import MAX_ENV_VALUE_CHARS, check_secret_name
from scheduler.store.secrets import SecretName

router = APIRouter(prefix="/secrets", tags=["secrets"])
SecretNameParam = Annotated[str, Path(max_length=128)]


class SecretValue(BaseModel):
    """The body of `PUT /secrets/{name}`."""

    value: str = Field(min_length=1, max_length=MAX_ENV_VALUE_CHARS)

    @field_validator("value")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("a secret cannot hold NUL bytes (a process cannot be given one)")
        return value


class SecretPublic(BaseModel):
    """A secret as the API shows it: its name and when it was set, never its value."""

    name: str
    updated_at: str

    @classmethod
    def of(cls, secret: SecretName) -> SecretPublic:
        """Build from the store's row."""
        return cls(name=secret.name, updated_at=secret.updated_at.isoformat())


def _checked(name: str) -> str:
    try:
        return check_secret_name(name)
    except ValueError as exc:
        raise SpecError(str(exc), [{"field": "name", "message": str(exc)}]) from None


@router.get("", response_model=list[SecretPublic])
def list_secrets(cluster: ClusterDep, who: IdentityDep) -> list[SecretPublic]:
    """Your secrets, by name."""
    return [SecretPublic.of(secret) for secret in cluster.secrets.names(who.user)]


@router.put("/{name}", response_model=SecretPublic)
def put_secret(
    name: SecretNameParam, body: SecretValue, cluster: ClusterDep, who: IdentityDep, response: Response
) -> SecretPublic:
    """Set one of your secrets (201 when new); tasks that name it get the new value from their next start."""
    secret, created = cluster.secrets.put(who.user, _checked(name), body.value)
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return SecretPublic.of(secret)


@router.delete("/{name}", status_code=status.HTTP_204_NO_CONTENT)
def delete_secret(name: SecretNameParam, cluster: ClusterDep, who: IdentityDep) -> Response:
    """Remove one of your secrets; a queued task that names it then fails as it starts, saying why."""
    cluster.secrets.remove(who.user, _checked(name))
    return Response(status_code=status.HTTP_204_NO_CONTENT)
