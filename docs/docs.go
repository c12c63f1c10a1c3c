// Package docs holds custodian's documentation; its test keeps the harness files in step with the loop instruction.
package docs
