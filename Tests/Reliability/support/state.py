"""The state the API serves against what the feed says: the items listed, a navigation read
without its presence, the log folded, and the checks that compare them."""


def list_items(client):
    items = []
    after = None
    while True:
        path = "/v1/items?limit=500" + (f"&after={after}" if after else "")
        response = client.request("GET", path)
        if response.status != 200:
            raise RuntimeError(f"list answered {response}")
        page = response.json()
        items.extend(page["items"])
        after = page["next"]
        if not after:
            return items


def without_presence(navigation):
    """A navigation read without its device's presence (lastSeenAt, online), which moves with
    every command or feed request of the device, refused ones included."""
    return {k: v for k, v in navigation.items() if k not in ("lastSeenAt", "online")}


def fold(changes):
    """The state the changes lead to: items by id, navigation states by clientID."""
    items, navigation = {}, {}
    for change in changes:
        if change["entity"] not in ("item", "navigation"):
            continue  # presence: not state the API serves back as items or navigation
        target = items if change["entity"] == "item" else navigation
        if change["op"] == "delete":
            target.pop(change["id"], None)
        else:
            target[change["id"]] = change["value"]
    return items, navigation


def check_feed_matches_state(violations, label, clients_by_user, all_changes_by_user):
    """The union of what every user's token sees is the whole log: seqs contiguous from 1, item
    entries the same for everyone, navigation entries each seen by its owner only; folding it gives
    exactly the items and navigation states the API serves now."""
    item_views = []
    navigation_seqs = {}
    for user, changes in all_changes_by_user.items():
        item_views.append([c for c in changes if c["entity"] == "item"])
        for change in changes:
            if change["entity"] == "navigation":
                if change["seq"] in navigation_seqs:
                    violations.add(f"{label}: navigation seq {change['seq']} seen by {user} and {navigation_seqs[change['seq']]}")
                navigation_seqs[change["seq"]] = user
    for view in item_views[1:]:
        violations.check(view == item_views[0], f"{label}: two tokens see different item entries")
    seqs = sorted({c["seq"] for changes in all_changes_by_user.values() for c in changes})
    if seqs:
        violations.check(seqs[0] == 1, f"{label}: the log starts at seq {seqs[0]}, not 1")
        missing = sorted(set(range(seqs[0], seqs[-1] + 1)) - set(seqs))
        violations.check(not missing, f"{label}: gaps in the feed, missing seqs {missing[:20]} (of {len(missing)})")
    for user, changes in all_changes_by_user.items():
        order = [c["seq"] for c in changes]
        violations.check(order == sorted(order) and len(order) == len(set(order)), f"{label}: {user}'s feed is not in seq order or repeats")
    any_user = next(iter(clients_by_user))
    items_from_feed, _ = fold(item_views[0] if item_views else [])
    served = {item["id"]: item for item in list_items(clients_by_user[any_user])}
    if served != items_from_feed:
        only_served = sorted(set(served) - set(items_from_feed))
        only_feed = sorted(set(items_from_feed) - set(served))
        differ = sorted(k for k in set(served) & set(items_from_feed) if served[k] != items_from_feed[k])
        violations.add(
            f"{label}: items served != items folded from the feed (only served {only_served[:5]}, only in the feed "
            f"{only_feed[:5]}, different {[(served[k], items_from_feed[k]) for k in differ[:2]]})")
    for user, client in clients_by_user.items():
        _, navigation_from_feed = fold(all_changes_by_user[user])
        response = client.request("GET", "/v1/users/me/navigation")
        # A read adds the device's presence, which the feed's navigation values do not carry.
        served_navigation = {n["clientID"]: without_presence(n) for n in response.json()["clients"]}
        if served_navigation != navigation_from_feed:
            differ = sorted(k for k in set(served_navigation) | set(navigation_from_feed)
                            if served_navigation.get(k) != navigation_from_feed.get(k))
            violations.add(
                f"{label}: {user}'s navigation served != folded from the feed for {differ[:5]}: "
                f"{[(served_navigation.get(k), navigation_from_feed.get(k)) for k in differ[:1]]}")
    return served


def check_repairs(violations, label, items, navigations):
    """No navigation state points at a missing item in its path or a delete alert."""
    for navigation in navigations:
        for route in navigation["path"]:
            violations.check(route["item"]["id"] in items,
                             f"{label}: {navigation['clientID']}'s path points at missing item {route['item']['id']}")
        destination = navigation["destination"] or {}
        if "deleteAlert" in destination:
            violations.check(destination["deleteAlert"]["itemID"] in items,
                             f"{label}: {navigation['clientID']} has a delete alert for missing item")
