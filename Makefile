# The Makefile only wraps ./fastreap; see README.md.  Both targets install
# what is missing (apt-get, as root) and cache kernels under
# $(FASTREAP_CACHE) (default ~/.cache/fastreap).  make check runs the
# workbench's own unit tests first, as its "unit" group.
.PHONY: demo check unit bench census clean-cache

demo:
	./fastreap demo

check:
	./fastreap check

# The unit tests alone: host-only, seconds, Debian's pytest (python3-pytest).
unit:
	/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/unit

bench:
	./fastreap bench

census:
	./fastreap census

clean-cache:
	rm -rf "$${FASTREAP_CACHE:-$$HOME/.cache/fastreap}"
