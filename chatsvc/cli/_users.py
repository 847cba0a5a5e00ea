"""chatsvc users add NAME [--admin] | list | revoke NAME"""

from __future__ import annotations

import argparse

from chatsvc.cli._common import fail, open_services
from store import NotFound, UserExists


def register(subparsers) -> None:
    users = subparsers.add_parser("users", help="manage users and their tokens")
    actions = users.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="create a user; prints its token on the last line")
    add.add_argument("name")
    add.add_argument("--admin", action="store_true", help="may write posts and shared entries")
    add.add_argument("--timezone", default="UTC", help="IANA zone for the date in prompts")
    add.set_defaults(run=_add)
    actions.add_parser("list", help="list users").set_defaults(run=_list)
    revoke = actions.add_parser("revoke", help="revoke a user's token")
    revoke.add_argument("name")
    revoke.set_defaults(run=_revoke)


def _add(args: argparse.Namespace) -> int:
    services = open_services()
    try:
        user, token = services.stores.users.add(args.name, admin=args.admin, timezone=args.timezone)
    except UserExists as exc:
        return fail(str(exc))
    finally:
        services.stores.db.close()
    role = "admin" if user.is_admin else "user"
    print(f"created {role} {user.name}; keep this token, it is shown once:")
    print(token)
    return 0


def _list(args: argparse.Namespace) -> int:
    services = open_services()
    try:
        for user in services.stores.users.list():
            state = f"revoked {user.revoked_at}" if user.revoked_at else "active"
            role = "admin" if user.is_admin else "user"
            print(f"{user.name}\t{role}\t{state}\tcreated {user.created_at}")
    finally:
        services.stores.db.close()
    return 0


def _revoke(args: argparse.Namespace) -> int:
    services = open_services()
    try:
        services.stores.users.revoke(args.name)
    except NotFound as exc:
        return fail(str(exc))
    finally:
        services.stores.db.close()
    print(f"revoked {args.name}")
    return 0
