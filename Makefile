# The Makefile only wraps ./fastreap; see README.md.  Both targets install
# what is missing (apt-get, as root) and cache kernels under
# $(FASTREAP_CACHE) (default ~/.cache/fastreap).
.PHONY: demo check bench census clean-cache

demo:
	./fastreap demo

check:
	./fastreap check

bench:
	./fastreap bench

census:
	./fastreap census

clean-cache:
	rm -rf "$${FASTREAP_CACHE:-$$HOME/.cache/fastreap}"
