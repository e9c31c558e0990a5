// Package cli is picasso's command line: one cobra command per file, each
// binding its flags into an options struct, and the viper configuration
// loading (defaults < config files < PICASSO_* environment < flags). It is
// the only package that knows about flags, config files and viper; the
// library packages receive plain structs.
package cli
