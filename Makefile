# MentorMate: build in release mode and install or remove the daemon, the client, the systemd
# units (and the user's mentormate-notify.service) and their companions, a commented default
# config, the man pages and bash completion.
#
#   make                      # release build (scripts/build-release): mentormated, mentormate, mentormate-ca
#   sudo make install         # into /usr/local (units into /usr/local/lib/systemd/...)
#   sudo make uninstall       # removes what install put there; keeps /var/lib/mentormate
#
# PREFIX and DESTDIR are honoured (make install PREFIX=/usr DESTDIR=/tmp/pkg). The units'
# ExecStart= and --config paths are rewritten to BINDIR and SYSCONFDIR. For packaging or tests,
# BUILD_DIR=DIR installs the programs already built in DIR, and SKIP_BUILD=1 skips the build.
# docs/OPERATIONS.md, "Installing", says what comes next (sysusers, systemctl enable).
#
#   make deb                  # mentormate_VERSION_ARCH.deb in this directory (Debian 12; below)

PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
DOCDIR      ?= $(DATADIR)/doc/mentormate
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
# systemd looks in /usr/local/lib and /usr/lib for units, sysusers.d and tmpfiles.d alike.
LIBDIR_SYSTEMD ?= $(PREFIX)/lib
UNITDIR     ?= $(LIBDIR_SYSTEMD)/systemd/system
USERUNITDIR ?= $(LIBDIR_SYSTEMD)/systemd/user
SYSUSERSDIR ?= $(LIBDIR_SYSTEMD)/sysusers.d
TMPFILESDIR ?= $(LIBDIR_SYSTEMD)/tmpfiles.d
# The config file lives in /etc whatever the prefix (the service reads it from there).
SYSCONFDIR  ?= /etc
DESTDIR     ?=

SWIFT       ?= swift
# The release build is scripts/build-release's: the flags and the scratch path (.build/static)
# scripts/run and scripts/demo use too, so whichever builds second only relinks.
RELEASE     = SWIFT="$(SWIFT)" bash scripts/build-release
SKIP_BUILD  ?=
BUILD_DIR   ?=
INSTALL     ?= install

PROGRAMS = mentormated mentormate mentormate-ca
# Rewrites the paths the units and the config name to the ones chosen here.
SUBST = sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/etc/mentormate/|$(SYSCONFDIR)/mentormate/|g'

CONF = $(DESTDIR)$(SYSCONFDIR)/mentormate/mentormated.conf

# Every file install makes (but the config, which is kept when it was edited).
FILES = \
	$(DESTDIR)$(BINDIR)/mentormated \
	$(DESTDIR)$(BINDIR)/mentormate \
	$(DESTDIR)$(BINDIR)/mentormate-ca \
	$(DESTDIR)$(UNITDIR)/mentormated.service \
	$(DESTDIR)$(UNITDIR)/mentormate-ca.service \
	$(DESTDIR)$(UNITDIR)/mentormated.socket \
	$(DESTDIR)$(USERUNITDIR)/mentormated.service \
	$(DESTDIR)$(USERUNITDIR)/mentormated.socket \
	$(DESTDIR)$(USERUNITDIR)/mentormate-notify.service \
	$(DESTDIR)$(SYSUSERSDIR)/mentormate.conf \
	$(DESTDIR)$(TMPFILESDIR)/mentormate.conf \
	$(DESTDIR)$(MANDIR)/man1/mentormate.1 \
	$(DESTDIR)$(MANDIR)/man8/mentormated.8 \
	$(DESTDIR)$(MANDIR)/man8/mentormate-ca.8 \
	$(DESTDIR)$(BASHCOMPDIR)/mentormate \
	$(DESTDIR)$(BASHCOMPDIR)/mentormated \
	$(DESTDIR)$(BASHCOMPDIR)/mentormate-ca \
	$(DESTDIR)$(DOCDIR)/OPERATIONS.md \
	$(DESTDIR)$(DOCDIR)/API.md \
	$(DESTDIR)$(DOCDIR)/mentormated.conf.example

.PHONY: all build install uninstall deb

all: build

build:
ifeq ($(SKIP_BUILD),)
	$(RELEASE) $(PROGRAMS) >/dev/null
endif

install: build
	@bin="$(BUILD_DIR)"; [ -n "$$bin" ] || bin="$$($(RELEASE))"; \
	for p in $(PROGRAMS); do \
	  [ -x "$$bin/$$p" ] || { echo "make install: $$bin/$$p is missing; run make (or give BUILD_DIR=)" >&2; exit 1; }; \
	done; \
	set -e; \
	$(INSTALL) -d -m 755 $(DESTDIR)$(BINDIR); \
	for p in $(PROGRAMS); do $(INSTALL) -m 755 "$$bin/$$p" $(DESTDIR)$(BINDIR)/$$p; done
	$(INSTALL) -d -m 755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR)
	$(SUBST) systemd/mentormated.service > $(DESTDIR)$(UNITDIR)/mentormated.service
	$(SUBST) systemd/mentormated.socket > $(DESTDIR)$(UNITDIR)/mentormated.socket
	$(SUBST) systemd/mentormate-ca.service > $(DESTDIR)$(UNITDIR)/mentormate-ca.service
	$(SUBST) systemd/user/mentormated.service > $(DESTDIR)$(USERUNITDIR)/mentormated.service
	$(SUBST) systemd/user/mentormated.socket > $(DESTDIR)$(USERUNITDIR)/mentormated.socket
	$(SUBST) systemd/user/mentormate-notify.service > $(DESTDIR)$(USERUNITDIR)/mentormate-notify.service
	chmod 644 $(DESTDIR)$(UNITDIR)/mentormated.* $(DESTDIR)$(UNITDIR)/mentormate-ca.service $(DESTDIR)$(USERUNITDIR)/mentormated.* $(DESTDIR)$(USERUNITDIR)/mentormate-notify.service
	$(INSTALL) -m 644 systemd/mentormate.sysusers $(DESTDIR)$(SYSUSERSDIR)/mentormate.conf
	$(INSTALL) -m 644 systemd/mentormate.tmpfiles $(DESTDIR)$(TMPFILESDIR)/mentormate.conf
	$(INSTALL) -d -m 755 $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DOCDIR)
	$(INSTALL) -m 644 man/man1/mentormate.1 $(DESTDIR)$(MANDIR)/man1/mentormate.1
	$(INSTALL) -m 644 man/man8/mentormated.8 $(DESTDIR)$(MANDIR)/man8/mentormated.8
	$(INSTALL) -m 644 man/man8/mentormate-ca.8 $(DESTDIR)$(MANDIR)/man8/mentormate-ca.8
	$(INSTALL) -m 644 completion/mentormate.bash $(DESTDIR)$(BASHCOMPDIR)/mentormate
	$(INSTALL) -m 644 completion/mentormate.bash $(DESTDIR)$(BASHCOMPDIR)/mentormated
	$(INSTALL) -m 644 completion/mentormate-ca.bash $(DESTDIR)$(BASHCOMPDIR)/mentormate-ca
	$(INSTALL) -m 644 docs/OPERATIONS.md docs/API.md $(DESTDIR)$(DOCDIR)/
	$(SUBST) config/mentormated.conf > $(DESTDIR)$(DOCDIR)/mentormated.conf.example
	chmod 644 $(DESTDIR)$(DOCDIR)/mentormated.conf.example
	$(INSTALL) -d -m 755 $(DESTDIR)$(SYSCONFDIR)/mentormate
	@# An existing config is never overwritten (upgrades keep local settings).
	@if [ -e $(CONF) ]; then \
	  echo "make install: kept $(CONF); the new default is $(DESTDIR)$(DOCDIR)/mentormated.conf.example"; \
	else \
	  $(SUBST) config/mentormated.conf > $(CONF) && chmod 644 $(CONF) && echo "installed $(CONF)"; \
	fi
	@# On the live system (no DESTDIR): make the user and the directories, tell systemd.
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
	  if command -v systemd-sysusers >/dev/null; then systemd-sysusers $(SYSUSERSDIR)/mentormate.conf; fi; \
	  if command -v systemd-tmpfiles >/dev/null; then systemd-tmpfiles --create $(TMPFILESDIR)/mentormate.conf || true; fi; \
	  if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; \
	  echo "next: systemctl enable --now mentormated.socket mentormated.service (docs/OPERATIONS.md)"; \
	fi

uninstall:
	rm -f $(FILES)
	@# The config goes only if it is still the shipped default; an edited one is kept.
	@if [ -e $(CONF) ]; then \
	  if $(SUBST) config/mentormated.conf | cmp -s - $(CONF); then rm -f $(CONF); \
	  else echo "make uninstall: kept $(CONF) (it was edited)"; fi; \
	fi
	rmdir $(DESTDIR)$(SYSCONFDIR)/mentormate $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
	@echo "make uninstall: the state directory (/var/lib/mentormate) and the mentormate user are kept; remove them by hand if you want them gone"

# --- The Debian package (docs/OPERATIONS.md, "Installing from the Debian package") ---
#
# `make deb` builds the programs in release mode with the Swift runtime linked statically (a
# Debian 12 machine without the toolchain runs them), stages packaging/deb/ as debian/ next to a
# changelog for VERSION, and runs dpkg-buildpackage there: debhelper installs the files through
# `make install PREFIX=/usr`, writes the maintainer scripts and computes Depends. The .deb lands
# in DEB_OUT (default: here). VERSION is MentorMateVersion.string (Sources/MentorAPI/Version.swift),
# the one the programs print with --version. The release build is scripts/build-release's, in
# .build/static (kept between runs, so a second `make deb` only relinks what changed; -z now binds
# every symbol at start, for lintian's hardening-no-bindnow); DEB_STAGE is scratch
# for dpkg-buildpackage (it writes the .deb, .buildinfo and .changes next to the staged tree). SKIP_BUILD=1 and BUILD_DIR=DIR package programs already built in DIR.
VERSION     := $(shell sed -n 's/^ *public static let string = "\(.*\)"$$/\1/p' Sources/MentorAPI/Version.swift)
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
DEB_STAGE   ?= .build/deb-stage
DEB_OUT     ?= .
DEB         = mentormate_$(VERSION)_$(DEB_ARCH).deb
DEB_TOOLS   = dpkg-buildpackage:dpkg-dev dh:debhelper dpkg-shlibdeps:dpkg-dev

deb:
	@[ -n "$(VERSION)" ] || { echo "make deb: no version in Sources/MentorAPI/Version.swift (public static let string = \"X.Y.Z\")" >&2; exit 1; }
	@[ -n "$(DEB_ARCH)" ] || { echo "make deb: dpkg is missing; this target builds Debian packages on Debian (bash scripts/deps)" >&2; exit 1; }
	@for t in $(DEB_TOOLS); do \
	  command -v $${t%%:*} >/dev/null || { echo "make deb: $${t%%:*} is missing; install $${t#*:} (bash scripts/deps does)" >&2; exit 1; }; \
	done
ifeq ($(SKIP_BUILD),)
	@command -v $(SWIFT) >/dev/null || { echo "make deb: $(SWIFT) is not on PATH; the Swift 6.3 toolchain builds the programs (scripts/deps)" >&2; exit 1; }
	$(RELEASE) $(PROGRAMS) >/dev/null
endif
	@bin="$(BUILD_DIR)"; [ -n "$$bin" ] || bin="$$($(RELEASE))"; \
	[ -d "$$bin" ] || { echo "make deb: $$bin does not exist; run make deb without SKIP_BUILD, or give BUILD_DIR=" >&2; exit 1; }; \
	bin="$$(cd "$$bin" && pwd)"; \
	for p in $(PROGRAMS); do \
	  [ -x "$$bin/$$p" ] || { echo "make deb: $$bin/$$p is missing; run make deb without SKIP_BUILD, or give BUILD_DIR=" >&2; exit 1; }; \
	  if ldd "$$bin/$$p" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|not found'; then \
	    echo "make deb: $$bin/$$p needs the libraries above, which no Debian package provides; build it with scripts/build-release (--static-swift-stdlib)" >&2; exit 1; \
	  fi; \
	done; \
	set -e; \
	src="$(CURDIR)"; stage="$(DEB_STAGE)/mentormate-$(VERSION)"; \
	rm -rf "$$stage" "$(DEB_STAGE)/build.log" "$(DEB_STAGE)"/mentormate_$(VERSION)_*; mkdir -p "$$stage"; \
	cp -R packaging/deb "$$stage/debian"; \
	{ echo "mentormate ($(VERSION)) unstable; urgency=medium"; echo; \
	  echo "  * MentorMate $(VERSION), packaged by make deb from the source tree"; \
	  echo "    (its history: git log, and README.md \"What works today\")."; echo; \
	  echo " -- $$(sed -n 's/^Maintainer: //p' packaging/deb/control)  $$(date -R -d @$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)})"; \
	} > "$$stage/debian/changelog"; \
	cd "$$stage" && MENTORMATE_SOURCE="$$src" MENTORMATE_BIN="$$bin" dpkg-buildpackage --build=binary --no-sign >../build.log 2>&1 \
	  || { cat ../build.log >&2; echo "make deb: dpkg-buildpackage failed (log above, in $(DEB_STAGE)/build.log)" >&2; exit 1; }; \
	cd "$$src"; mkdir -p "$(DEB_OUT)"; cp "$(DEB_STAGE)/$(DEB)" "$(DEB_OUT)/$(DEB)"; \
	echo "make deb: $(DEB_OUT)/$(DEB)"; \
	dpkg-deb --field "$(DEB_OUT)/$(DEB)" Depends Recommends | sed 's/^/  /'
