"""rafka's hooks into Ray's internals, behind one gate (`gate`): pinned to the Ray they were
written for, each checking what it replaces first, all standing down loudly otherwise."""
