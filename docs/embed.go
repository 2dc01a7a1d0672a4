// Package docs holds the reference documents; Go code uses only the machine-readable consumer
// contract under contract/ (JSON Schemas, the AsyncAPI document and complete example values,
// made by package contract), which the read API serves.
package docs

import "embed"

// Contract is docs/contract: the schema documents and AsyncAPI document at its top, the example
// values under examples/.
//
//go:embed contract/*.json contract/examples/*.json
var Contract embed.FS
