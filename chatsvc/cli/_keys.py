"""chatsvc keys add NAME | list | revoke KEY_ID: service keys, one per front end.

A service key acts for the front end's end users, each request naming one (the
CHATSVC_USER_HEADER header): docs/api.md#service-keys.
"""

from __future__ import annotations

import argparse

from chatsvc.admin import new_key, service_key
from chatsvc.cli._common import database_location, services_open


def register(subparsers) -> None:
    keys = subparsers.add_parser("keys", help="manage service keys (front ends acting for "
                                              "their users)")
    actions = keys.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="create a front end's account and its key; prints "
                                         "the key on the last line")
    add.add_argument("name", help="the front end, e.g. openwebui")
    add.set_defaults(run=_add)
    actions.add_parser("list", help="list service keys").set_defaults(run=_list)
    revoke = actions.add_parser("revoke", help="revoke a key at once (its id: keys list)")
    revoke.add_argument("key_id")
    revoke.set_defaults(run=_revoke)


def _add(args: argparse.Namespace) -> int:
    with services_open(create=True) as services:
        account, key = new_key(services.stores.users, args.name)
        header = services.settings.user_header
    print(f"created service key for {account.name} in {database_location(services.settings)}; "
          f"send it with each end user's id in {header}. Keep it, it is shown once:")
    print(key)
    return 0


def _list(args: argparse.Namespace) -> int:
    with services_open() as services:
        for key in services.stores.users.tokens(kind="service")[0]:
            state = f"revoked {key.revoked_at}" if key.revoked_at else "active"
            print(f"{key.id}\t{key.user_name}\t{state}\tcreated {key.created_at}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    with services_open() as services:
        users = services.stores.users
        users.revoke_token(service_key(users, args.key_id).id)
    print(f"revoked key {args.key_id}")
    return 0
