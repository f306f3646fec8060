"""A small WebShop look-alike on 127.0.0.1, for testing ``envs.webshop.http_client`` end to end.

It serves the URL scheme of princeton-nlp/WebShop's ``web_agent_site/app.py`` (stdlib
``http.server``, no Flask) with pages shaped like its Jinja templates (the same ids, classes,
headings, mismatched closing tags and hidden done-page table), over a hard-coded catalog and two
goals. What it copies from the real stack because the client depends on it:

* the path is percent-decoded *before* it is split into route parts, as werkzeug does (so a
  quoted ``/`` still splits a part and the request 404s);
* ``<keywords>`` is ``literal_eval``-ed when it starts with ``[``, else wrapped in a list;
  ``<options>`` is always ``literal_eval``-ed (a bad literal is an HTTP 500, as in Flask);
* ``fixed_<i>`` sessions get ``GOALS[i]`` (an index past the list is a 500); a route for a
  session the server has not seen is a 500 (app.py's ``KeyError``).

It is not WebShop: search ranks products by how many query words their title holds, and the
reward is 1.0 for the goal's asin with all the goal's options under its price cap, else the
matched fraction (options and price), 0.0 for another product.
"""

from __future__ import annotations

import hashlib
import html
import json
import pprint
import threading
import urllib.parse
from ast import literal_eval
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["CATALOG", "GOALS", "LocalShop", "LocalWebShopServer"]


def _product(asin, title, price, options=None, description="", bullets=(), attributes=()):
    return {
        "asin": asin,
        "Title": title,
        "Price": price,  # the display string, as WebShop's loader makes it
        "price": float(price.split("$")[1].split()[0]),  # the price the reward uses (the low end)
        "options": options or {},
        "Description": description,
        "BulletPoints": list(bullets),
        "Attributes": list(attributes),
        "Rating": "N.A.",
    }


CATALOG = [
    _product(
        "B0ABC",
        "Red Shoe",
        "$45.0",
        {"color": ["black | white", "navy"], "size": ["9", "10.5 wide"]},
        "A red running shoe with a rubber sole.",
        ["rubber sole", "machine washable"],
        ["rubber sole"],
    ),
    _product(
        "B0ODD",
        "Odd Shoe Insert",
        "$8.5 to $15.0",
        {
            "style": ['10.5" wide', "#2 pack", "it's 50% off? {ok}", "grün ☃", "a&b <c>"],
            "pack": ["pack of 2", "\\n literal"],
        },
        "Inserts for odd shoes.",
        ["fits most shoes"],
    ),
    _product("B0TEA", "Green Tea", "$12.99", {"flavor": ["mint", "lemon"]}, "Loose leaf tea.", ["organic"]),
    _product("B0LAMP", "Desk Lamp", "$30.0", description="A lamp.", bullets=["led"]),
] + [_product(f"B0PLN{i:02d}", f"Plain Shoe {i}", f"${20 + i}.0", description="Plain.") for i in range(10)]

GOALS = [
    {
        "asin": "B0ABC",
        "instruction_text": "i need red shoes in navy, size 10.5 wide, under 50 dollars",
        "goal_options": {"color": "navy", "size": "10.5 wide"},
        "attributes": ["rubber sole"],
        "price_upper": 50.0,
    },
    {
        "asin": "B0ODD",
        "instruction_text": "i want odd shoe inserts, style #2 pack, pack of 2, under 20 dollars",
        "goal_options": {"style": "#2 pack", "pack": "pack of 2"},
        "attributes": [],
        "price_upper": 20.0,
    },
]

_HEAD = """  <head>
    <link rel="stylesheet" href="/static/style.css">
    <link rel="stylesheet" href="https://maxcdn.bootstrapcdn.com/bootstrap/3.4.1/css/bootstrap.min.css">
    <script src="https://ajax.googleapis.com/ajax/libs/jquery/3.5.1/jquery.min.js"></script>
    <link rel="icon" href="data:,">
  </head>"""

_TOP = """<!DOCTYPE html>
<html>
{head}
  <body>
    <div class="container py-5">
      <div class="row top-buffer">
        <div class="col-sm-6">
          <div id="instruction-text" class="text-center">
            <h4>Instruction:<br>{instruction}</h4>
          </div>
        </div>
      </div>
      <div class="row top-buffer">
        <form method="post" action="{index_url}">
          <button type="submit" class="btn btn-success">Back to Search</button>
        </form>
      </div>
"""

_BOTTOM = """    </div>
  </body>
</html>"""


def _e(value) -> str:
    """Jinja's autoescape (markupsafe): & < > " ' as entities."""
    return html.escape(str(value), quote=True)


def _q(value) -> str:
    return urllib.parse.quote(str(value), safe="")


class LocalShop:
    """The app without HTTP: ``route(path parts) -> (status, html)``; records what it was sent."""

    def __init__(self, show_attrs: bool = False) -> None:
        self.show_attrs = show_attrs
        self.products = {p["asin"]: p for p in CATALOG}
        self.sessions: dict[str, dict] = {}  # session id -> goal
        self.searches: list[list[str]] = []  # the keyword lists received
        self.purchases: list[tuple[str, str, dict]] = []  # (session, asin, options) received
        self.paths: list[str] = []  # every decoded path
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ routing
    def route(self, parts: list[str]) -> tuple[int, str]:
        """A page for the path parts: 404 when no route matches; a handler's exception
        propagates (the HTTP handler answers 500, as Flask does)."""
        name, args = parts[0], parts[1:]
        if len(parts) == 1 and name:
            return 200, self.index(name)
        routes = {"search_results": (3, self.search_results), "item_page": (5, self.item_page)}
        routes.update(item_sub_page=(6, self.item_sub_page), done=(3, self.done))
        if name in routes and len(args) == routes[name][0]:
            return 200, routes[name][1](*args)
        return 404, "<h1>Not Found</h1>"

    def _goal(self, session_id: str) -> dict:
        return self.sessions[session_id]  # KeyError -> 500, as app.py's user_sessions[...]

    # ------------------------------------------------------------------ pages
    def index(self, session_id: str) -> str:
        with self.lock:
            if session_id not in self.sessions:
                index = int(session_id.split("_")[-1]) if "fixed" in session_id else 0
                self.sessions[session_id] = GOALS[index]  # IndexError -> 500
        goal = self.sessions[session_id]
        return f"""<!DOCTYPE html>
<html>
{_HEAD}
  <body>
    <!-- Code reference: https://bootsnipp.com/snippets/m13mN -->
    <div class="container" style="margin-top: 8%;">
      <div class="col-md-6 col-md-offset-3">
        <div class="row">
          <div id="logo" class="text-center">
            <h2>WebShop</h2>
          </div>
          <div id="instruction-text" class="text-center">
            <h4>Instruction: <br>{_e(goal["instruction_text"])}</h4>
          </div>
          <form role="form" id="form-buscar" method="post" action="/{_q(session_id)}">
            <div class="form-group">
              <div class="input-group">
                <input id="search_input" class="form-control" type="text" name="search_query" placeholder="Search..." required/>
                <span class="input-group-btn">
                  <button class="btn btn-success" type="submit"><i class="glyphicon glyphicon-search" aria-hidden="true"></i>Search</button>
                </span>
              </div>
            </div>
          </form>
        </div>
      </div>
    </div>
  </body>
</html>"""  # noqa: E501

    def search(self, keywords: list[str]) -> list[dict]:
        """Products by how many query words their title holds ("shoes" counts as "shoe"), then asin."""
        words = " ".join(keywords).lower().split()
        scored = []
        for product in CATALOG:
            title = product["Title"].lower().split()
            score = sum(w in title or w.rstrip("s") in title for w in words)
            if score:
                scored.append((-score, product["asin"], product))
        return [product for _, _, product in sorted(scored, key=lambda s: s[:2])][:50]

    def search_results(self, session_id: str, keywords: str, page: str) -> str:
        goal = self._goal(session_id)
        page_number = int(page)
        words = literal_eval(keywords) if keywords.startswith("[") else [keywords]
        with self.lock:
            self.searches.append(words)
        hits = self.search(words)
        shown = hits[(page_number - 1) * 10 : page_number * 10]
        kw = _q(str(words))
        nav = []
        if page_number > 1:
            nav.append(self._nav_button(session_id, kw, page_number - 1, "&lt; Prev"))
        else:
            nav.append("""            <div class="col-sm-2">
            </div>
""")
        nav.append(self._nav_button(session_id, kw, page_number + 1, "Next &gt;"))
        items = []
        for item in shown:
            url = f"/item_page/{_q(session_id)}/{item['asin']}/{kw}/{page_number}/{_q('{}')}"
            items.append(f"""        <div class="col-lg-12 mx-auto list-group-item">
          <div class="col-lg-4">
            <img src="https://example.invalid/{item["asin"]}.jpg" class="result-img">
          </div>
          <div class="col-lg-8">
            <ul class="list-group shadow">
                <div class="media align-items-lg-center flex-column flex-lg-row p-3">
                  <div class="media-body order-2 order-lg-1 searched-product">
                    <h4 class="mt-0 font-weight-bold mb-2 product-asin"><a class="product-link" href="{url}">{item["asin"]}</a></h5>
                    <h4 class="mt-0 font-weight-bold mb-2 product-title">{_e(item["Title"])}</h5>
                    <div class="d-flex align-items-center justify-content-between mt-1">
                      <h5 class="font-weight-bold my-2 product-price">{_e(item["Price"])}</h6>
                    </div>
<!--
                    <div class="d-flex align-items-center justify-content-between mt-1">
                      <h5 class="font-weight-bold my-2 product-category">{_e(item["Title"])}</h5>
                    </div>
-->
                  </div>
                </div>
            </ul>
          </div>
        </div>
""")  # noqa: E501
        return (
            _TOP.format(head=_HEAD, instruction=_e(goal["instruction_text"]), index_url=f"/{_q(session_id)}")
            + f"""      <div class="row top-buffer">
        <div class="col-sm-8">
          <div class="display-4">
            <h3>Page {page_number} (Total results: {len(hits)})</h3>
          </div>
{"".join(nav)}        </div>
      </div>

      <div class="row top-buffer">
{"".join(items)}      </div>
"""
            + _BOTTOM
        )

    @staticmethod
    def _nav_button(session_id: str, kw: str, page: int, label: str) -> str:
        return f"""            <div class="col-sm-2">
              <form method="post" action="/search_results/{_q(session_id)}/{kw}/{page}">
                <button type="submit" class="btn btn-primary">{label}</button>
              </form>
            </div>
"""

    def _product_page_top(self, session_id, asin, prev_url) -> tuple[dict, str]:
        goal = self._goal(session_id)
        product = self.products[asin]  # KeyError -> 500
        top = _TOP.format(
            head=_HEAD, instruction=_e(goal["instruction_text"]), index_url=f"/{_q(session_id)}"
        )
        top += f"""      <div class="row top-buffer">
        <form method="post" action="{prev_url}">
          <button type="submit" class="btn btn-primary">&lt; Prev</button>
        </form>
      </div>
"""
        return product, top

    def item_page(self, session_id: str, asin: str, keywords: str, page: str, options: str) -> str:
        chosen = literal_eval(options)
        prev_url = f"/search_results/{_q(session_id)}/{_q(keywords)}/{page}"
        product, top = self._product_page_top(session_id, asin, prev_url)
        base = f"{_q(session_id)}/{asin}/{_q(keywords)}/{page}"
        blocks = []
        for name, values in product["options"].items():
            radios = []
            for index, value in enumerate(values):
                url = f"/item_page/{base}/{_q(str({**chosen, name: value}))}"
                radios.append(f"""                  <input type="radio" id="radio_{_e(name)}{index}" name="{_e(name)}" value="{_e(value)}" data-url="{_e(url)}">
                  <label for="radio_{_e(name)}{index}">{_e(value)}</label>
""")  # noqa: E501
            blocks.append(f"""            <div class="row top-buffer">
              <h4>{_e(name)}</h4>
              <div class="radio-toolbar">
{"".join(radios)}              </div>
            </div>
""")
        subs = ["Description", "Features", "Reviews"] + (["Attributes"] if self.show_attrs else [])
        tabs = "".join(
            f"""            <div class="col-sm-3" name="{sub.lower()}">
              <form method="post" action="/item_sub_page/{base}/{sub}/{_q(str(chosen))}">
                <button class="btn btn-primary" type="submit">{sub}</button>
              </form>
            </div>
"""
            for sub in subs
        )
        return (
            top
            + f"""      <div class="row top-buffer">
        <div class="col-md-4 mb-4 mb-md-0">
          <div class="row top-buffer">
            <img id="product-image" src="https://example.invalid/{asin}.jpg" class="item-page-img">
          </div>
{"".join(blocks)}        </div>
        <div class="col-md-6">
          <h2>{_e(product["Title"])}</h2>
          <h4>Price: {_e(product["Price"])}</h4>
          <h4>Rating: {_e(product["Rating"])}</h4>
          <div class="row top-buffer">
{tabs}          </div>
        </div>
        <div class="col-sm-2">
          <div class="row top-buffer">
            <form method="post" action="/done/{_q(session_id)}/{asin}/{_q(str(chosen))}">
              <button type="submit" class="btn btn-lg purchase">Buy Now</button>
            </form>
          </div>
        </div>
      </div>
    </div>
  </body>
  <script>
    $(document).ready(function() {{
      let options = JSON.parse(`{_e(json.dumps(chosen))}`);
      $('input:radio').each(function() {{ /* check the chosen ones */ }});
    }});
  </script>
</html>"""
        )

    def item_sub_page(self, session_id, asin, keywords, page, sub_page, options) -> str:
        chosen = literal_eval(options)
        prev_url = f"/item_page/{_q(session_id)}/{asin}/{_q(keywords)}/{page}/{_q(str(chosen))}"
        product, top = self._product_page_top(session_id, asin, prev_url)
        if sub_page == "Description":
            body = f'                <p class="product-info">{_e(product["Description"])}</p>\n'
        elif sub_page in ("Features", "Attributes"):
            key, css = (
                ("BulletPoints", "product-info") if sub_page == "Features" else ("Attributes", "attribute")
            )
            item = '                  <li><p class="{}"> {}</p></li>\n'
            lines = "".join(item.format(css, _e(bullet)) for bullet in product[key])
            body = f"                <ul>\n{lines}                </ul>\n"
        elif sub_page == "Reviews":
            body = ""  # WebShop's review loading is commented out: always empty
        else:
            raise ValueError(sub_page)  # -> 500, as the real template lookup's KeyError
        return (
            top
            + f"""      <div class="row top-buffer">
        <div class="col-md-12">
          <div class="row top-buffer">
            <div class="col-sm-6" name="{sub_page.lower()}">
              <div class="card card-body">
{body}              </div>
            </div>
          </div>
        </div>
      </div>
"""
            + _BOTTOM
        )

    def reward(self, goal: dict, asin: str, options: dict) -> tuple[float, dict]:
        if asin != goal["asin"]:
            return 0.0, {"r_type": 0.0, "r_att": 0.0, "w_att": 0.0, "r_price": False, "w_price": 1.0}
        wanted = goal["goal_options"]
        matched = sum(options.get(name) == value for name, value in wanted.items())
        under = self.products[asin]["price"] <= goal["price_upper"]
        total = (matched + under) / (len(wanted) + 1)
        info = {"r_type": 1.0, "r_option": matched / len(wanted) if wanted else None, "r_price": under}
        return total, info

    def done(self, session_id: str, asin: str, options: str) -> str:
        goal = self._goal(session_id)
        chosen = literal_eval(options)
        product = self.products[asin]
        with self.lock:
            self.purchases.append((session_id, asin, chosen))
        reward, reward_info = self.reward(goal, asin, chosen)
        code = hashlib.sha1(session_id.encode()).hexdigest()[:10].upper()  # a stand-in mturk code
        target = "\n".join(
            f'              <h4 id="goal-{key}">{key}<pre>{_e(goal[key])}</pre></h4>'
            for key in ("asin", "goal_options", "attributes", "price_upper")
        )
        return f"""<!DOCTYPE html>
<html>
{_HEAD}
  <body>
    <!-- Code reference: https://bootsnipp.com/snippets/m13mN -->
    <div class="container" style="margin-top: 8%;">
      <div class="col-md-6 col-md-offset-3">
        <div class="row">
          <div id="thankyou" class="text-center">
            <h1>Thank you for shopping with us!</h1>
          </div>
          <div id="stats" class="text-center">
            <h3 align="mturk_code">Your code: </h3>
            <p><pre>{code}</pre> (Paste it in your MTurk interface.)</p>
            <div style="display:none">
              <h2 align="left">Purchased</h2>
              <hr class="solid">
              <h4 id="asin">asin<pre>{_e(asin)}</pre></p>
              <h4 id="options">options<pre>{_e(json.dumps(chosen, sort_keys=True))}</pre></h4>
              <h4 id="purchased_attrs">attrs<pre>{_e(product["Attributes"])}</pre></h4>
              <h2 align="left">Target</h2>
              <hr class="solid">
{target}
              <h4>Goal <div id="goal"><pre>{_e(pprint.pformat(goal))}</pre></div></h4>
              <h2 align="left">Reward</h2>
            </div>
            <hr class="solid">
            <h3   id="reward">Your score (min 0.0, max 1.0)<pre>{reward}</pre></h3>
            <h4 hidden>Reward Details <div id="reward_info"><pre>{_e(pprint.pformat(reward_info))}</pre></div></h4>
          </div>
        </div>
      </div>
    </div>
  </body>
</html>"""  # noqa: E501


class _Handler(BaseHTTPRequestHandler):
    server: LocalWebShopServer

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = urllib.parse.urlsplit(self.path).path
        decoded = urllib.parse.unquote(path, errors="replace")  # werkzeug decodes before routing
        shop = self.server.shop
        with shop.lock:
            shop.paths.append(decoded)
        try:
            status, page = shop.route(decoded.split("/")[1:])
        except Exception as error:  # what Flask turns into a 500
            status, page = 500, f"<h1>Internal Server Error</h1><p>{_e(type(error).__name__)}</p>"
        body = page.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, format, *args) -> None:  # noqa: A002 - http.server's signature
        pass  # keep the test output quiet


class LocalWebShopServer(ThreadingHTTPServer):
    """``with LocalWebShopServer() as server: ServerSession(server.base_url)``: serves ``LocalShop``
    on 127.0.0.1 at an ephemeral port from a daemon thread; ``close()`` stops it."""

    daemon_threads = True

    def __init__(self, show_attrs: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.shop = LocalShop(show_attrs=show_attrs)
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="local-webshop", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join()

    def __enter__(self) -> LocalWebShopServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
