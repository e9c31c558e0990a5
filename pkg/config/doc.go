// Package config holds picasso's typed configuration: the data, model,
// train, fae and scheduler sections that YAML files, PICASSO_* environment
// variables and command-line flags fill in (the CLI does the filling; this
// package only defines the structs, their defaults and their validation).
package config
