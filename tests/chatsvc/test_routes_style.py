"""The route modules keep one style: a `router` each, all in ROUTERS, and every
dependency injected by name: only `_provide` reaches into the application state."""

import pkgutil
from importlib import import_module
from pathlib import Path

import chatsvc.routes
from chatsvc.routes import ROUTERS

ROUTES_DIR = Path(chatsvc.routes.__file__).parent


def test_every_route_module_has_one_router_and_it_is_registered():
    modules = [m.name for m in pkgutil.iter_modules([str(ROUTES_DIR)])
               if not m.name.startswith("_")]
    routers = [import_module(f"chatsvc.routes.{name}").router for name in modules]
    assert sorted(map(id, routers)) == sorted(map(id, ROUTERS))


def test_no_route_reads_the_application_state():
    offenders = [p.name for p in ROUTES_DIR.glob("*.py")
                 if p.name != "_provide.py" and ".state" in p.read_text()]
    assert offenders == []
