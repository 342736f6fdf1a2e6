# The Debian package: `cpack -G DEB` in a build directory packs what `cmake --install` installs
# (the executables, the man pages, the shell completions) under /usr. dpkg-shlibdeps derives
# Depends from the libraries the executables link, so the list follows the build machine's
# library versions instead of a hand-kept copy that would go stale.

set(CPACK_PACKAGE_NAME credkit)
set(CPACK_PACKAGE_VENDOR credkit)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CREDKIT_PACKAGE_CONTACT "credkit maintainers <credkit@localhost>"
    CACHE STRING "the Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${CREDKIT_PACKAGE_CONTACT}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
# in the build directory (package/), never beside the sources
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libcurl is opened on its first use (common/curl_load.c), not linked, so dpkg-shlibdeps cannot
# see it: it is named here (libmicrohttpd, which mcp-bridge opens the same way, mcp-auth links)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libcurl4 (>= 7.88.0) | libcurl4t64")
# The keychain is a Secret Service on the session bus: GNOME's, or KeePassXC's
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "gnome-keyring | keepassxc")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# below the summary line; CPack indents each line as the control file wants
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "secrets resolves named secrets from recipes (an environment variable, the
Secret Service keychain, a command with a time-to-live, a private file).
mcp-auth signs in to MCP servers that use OAuth and keeps their tokens fresh.
mcp-bridge is the one MCP server an agent runs: it serves every server of the
mcp.json files as one, asking secrets and mcp-auth for their credentials.")

include(CPack)
