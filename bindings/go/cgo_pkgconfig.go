//go:build grape_pkgconfig

package grape

// With -tags grape_pkgconfig the package links an installed libgrape found by pkg-config
// (`grape.pc`, installed by `cmake --install`); set PKG_CONFIG_PATH for a non-standard prefix.

// #cgo pkg-config: grape
import "C"
