// Package docs holds msgx's product documentation (spec.md, sis.md, decisions.md and the stage
// documents). It has no code; its test keeps the repository standing alone: every rule id and
// section that code or documents cite must be defined in spec.md or sis.md, and nothing may
// point to documents outside the repository.
package docs
