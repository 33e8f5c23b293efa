# MentorMate: build in release mode and install or remove the daemon, the client, the systemd
# units (and the user's mentormate-notify.service) and their companions, a commented default
# config, the man pages and bash completion.
#
#   make                      # swift build -c release (mentormated and mentormate)
#   sudo make install         # into /usr/local (units into /usr/local/lib/systemd/...)
#   sudo make uninstall       # removes what install put there; keeps /var/lib/mentormate
#
# PREFIX and DESTDIR are honoured (make install PREFIX=/usr DESTDIR=/tmp/pkg). The units'
# ExecStart= and --config paths are rewritten to BINDIR and SYSCONFDIR. For packaging or tests,
# BUILD_DIR=DIR installs the programs already built in DIR, and SKIP_BUILD=1 skips the build.
# docs/OPERATIONS.md, "Installing", says what comes next (sysusers, systemctl enable).

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
SWIFTFLAGS  ?= -c release
SKIP_BUILD  ?=
BUILD_DIR   ?=
INSTALL     ?= install

PROGRAMS = mentormated mentormate
# Rewrites the paths the units and the config name to the ones chosen here.
SUBST = sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/etc/mentormate/|$(SYSCONFDIR)/mentormate/|g'

CONF = $(DESTDIR)$(SYSCONFDIR)/mentormate/mentormated.conf

# Every file install makes (but the config, which is kept when it was edited).
FILES = \
	$(DESTDIR)$(BINDIR)/mentormated \
	$(DESTDIR)$(BINDIR)/mentormate \
	$(DESTDIR)$(UNITDIR)/mentormated.service \
	$(DESTDIR)$(UNITDIR)/mentormated.socket \
	$(DESTDIR)$(USERUNITDIR)/mentormated.service \
	$(DESTDIR)$(USERUNITDIR)/mentormated.socket \
	$(DESTDIR)$(USERUNITDIR)/mentormate-notify.service \
	$(DESTDIR)$(SYSUSERSDIR)/mentormate.conf \
	$(DESTDIR)$(TMPFILESDIR)/mentormate.conf \
	$(DESTDIR)$(MANDIR)/man1/mentormate.1 \
	$(DESTDIR)$(MANDIR)/man8/mentormated.8 \
	$(DESTDIR)$(BASHCOMPDIR)/mentormate \
	$(DESTDIR)$(BASHCOMPDIR)/mentormated \
	$(DESTDIR)$(DOCDIR)/OPERATIONS.md \
	$(DESTDIR)$(DOCDIR)/API.md \
	$(DESTDIR)$(DOCDIR)/mentormated.conf.example

.PHONY: all build install uninstall

all: build

build:
ifeq ($(SKIP_BUILD),)
	$(SWIFT) build $(SWIFTFLAGS) --product mentormated
	$(SWIFT) build $(SWIFTFLAGS) --product mentormate
endif

install: build
	@bin="$(BUILD_DIR)"; [ -n "$$bin" ] || bin="$$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)"; \
	for p in $(PROGRAMS); do \
	  [ -x "$$bin/$$p" ] || { echo "make install: $$bin/$$p is missing; run make (or give BUILD_DIR=)" >&2; exit 1; }; \
	done; \
	set -e; \
	$(INSTALL) -d -m 755 $(DESTDIR)$(BINDIR); \
	for p in $(PROGRAMS); do $(INSTALL) -m 755 "$$bin/$$p" $(DESTDIR)$(BINDIR)/$$p; done
	$(INSTALL) -d -m 755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR)
	$(SUBST) systemd/mentormated.service > $(DESTDIR)$(UNITDIR)/mentormated.service
	$(SUBST) systemd/mentormated.socket > $(DESTDIR)$(UNITDIR)/mentormated.socket
	$(SUBST) systemd/user/mentormated.service > $(DESTDIR)$(USERUNITDIR)/mentormated.service
	$(SUBST) systemd/user/mentormated.socket > $(DESTDIR)$(USERUNITDIR)/mentormated.socket
	$(SUBST) systemd/user/mentormate-notify.service > $(DESTDIR)$(USERUNITDIR)/mentormate-notify.service
	chmod 644 $(DESTDIR)$(UNITDIR)/mentormated.* $(DESTDIR)$(USERUNITDIR)/mentormated.* $(DESTDIR)$(USERUNITDIR)/mentormate-notify.service
	$(INSTALL) -m 644 systemd/mentormate.sysusers $(DESTDIR)$(SYSUSERSDIR)/mentormate.conf
	$(INSTALL) -m 644 systemd/mentormate.tmpfiles $(DESTDIR)$(TMPFILESDIR)/mentormate.conf
	$(INSTALL) -d -m 755 $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DOCDIR)
	$(INSTALL) -m 644 man/man1/mentormate.1 $(DESTDIR)$(MANDIR)/man1/mentormate.1
	$(INSTALL) -m 644 man/man8/mentormated.8 $(DESTDIR)$(MANDIR)/man8/mentormated.8
	$(INSTALL) -m 644 completion/mentormate.bash $(DESTDIR)$(BASHCOMPDIR)/mentormate
	$(INSTALL) -m 644 completion/mentormate.bash $(DESTDIR)$(BASHCOMPDIR)/mentormated
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
