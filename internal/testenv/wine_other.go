//go:build !windows

package testenv

const underWine = false
