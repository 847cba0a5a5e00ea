"""chatsvc users add NAME [--admin] | token NAME | list | revoke NAME [--token ID] |
export NAME [-o FILE] | delete NAME [--yes]"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from chatsvc.admin import new_token, new_user
from chatsvc.cli._common import database_location, fail, services_open
from chatsvc.export import export_pieces
from store import NotFound


def register(subparsers) -> None:
    users = subparsers.add_parser("users", help="manage users and their tokens")
    actions = users.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="create a user; prints its token on the last line")
    add.add_argument("name")
    add.add_argument("--admin", action="store_true", help="may write posts and shared entries")
    add.add_argument("--timezone", default="UTC", help="IANA zone for the date in prompts")
    add.set_defaults(run=_add)
    token = actions.add_parser("token", help="one more token for a user (the others keep "
                                             "working); prints it on the last line")
    token.add_argument("name")
    token.set_defaults(run=_token)
    actions.add_parser("list", help="list users").set_defaults(run=_list)
    revoke = actions.add_parser("revoke", help="disable a user (all their tokens), or "
                                               "revoke one token with --token")
    revoke.add_argument("name")
    revoke.add_argument("--token", metavar="ID", help="only this token (the part before "
                                                      "the dot), e.g. after `users token`")
    revoke.set_defaults(run=_revoke)
    export = actions.add_parser("export", help="a user's data as one JSON document")
    export.add_argument("name")
    export.add_argument("-o", "--output", help="write to this file (default: stdout)")
    export.set_defaults(run=_export)
    remove = actions.add_parser("delete", help="delete a user and all their data")
    remove.add_argument("name")
    remove.add_argument("--yes", action="store_true", help="do not ask to type the name")
    remove.set_defaults(run=_delete)


def _add(args: argparse.Namespace) -> int:
    with services_open(create=True) as services:  # the first user creates the database
        user, token = new_user(services.stores.users, args.name, admin=args.admin,
                               timezone=args.timezone)
    role = "admin" if user.is_admin else "user"
    print(f"created {role} {user.name} in {database_location(services.settings)}; "
          "keep this token, it is shown once:")
    print(token)
    return 0


def _token(args: argparse.Namespace) -> int:
    with services_open() as services:
        users = services.stores.users
        issued, token = new_token(users, users.named(args.name).id)
    print(f"new token {issued.id} for {args.name}; the others keep working until revoked "
          f"(chatsvc users revoke {args.name} --token ID). Keep it, it is shown once:")
    print(token)
    return 0


def _list(args: argparse.Namespace) -> int:
    with services_open() as services:
        for user in services.stores.users.list():
            state = f"revoked {user.revoked_at}" if user.revoked_at else "active"
            role = "admin" if user.is_admin else "user"
            print(f"{user.name}\t{role}\t{state}\tcreated {user.created_at}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    with services_open() as services:
        users = services.stores.users
        if args.token is None:
            users.revoke(args.name)
        elif users.token(args.token).user_id == users.named(args.name).id:
            users.revoke_token(args.token)
        else:
            raise NotFound(f"{args.name} has no token {args.token}")
    print(f"revoked {args.name}" + (f"'s token {args.token}" if args.token else ""))
    return 0


def _export(args: argparse.Namespace) -> int:
    with services_open() as services:
        user = services.stores.users.named(args.name)
        try:
            _write(export_pieces(services.stores, user), args.output)
        except FileExistsError:
            return fail(f"{args.output} exists already: give a new path")
    if args.output:
        print(f"exported {args.name} to {args.output}", file=sys.stderr)
    return 0


def _write(pieces: Iterable[str], output: str | None) -> None:
    if output is None:
        sys.stdout.writelines(pieces)
        return
    with open(output, "x", encoding="utf-8") as out:  # "x": never overwrite a file
        out.writelines(pieces)


def _delete(args: argparse.Namespace) -> int:
    with services_open() as services:
        user = services.stores.users.named(args.name)
        if not args.yes:
            typed = input(f"delete {user.name} and all their data, vectors included? "
                          "Type the name to confirm: ")
            if typed.strip() != user.name:
                return fail("not confirmed; nothing deleted")
        services.images.forget_users(services.stores.accounts.delete(user.id))
    print(f"deleted {args.name} and all their data")
    return 0
