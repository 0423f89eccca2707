// Force-included into feed/config.cpp when FUZZ_TOML_ASSERTS is OFF (see
// CMakeLists.txt): toml++'s internal assert()s compiled out, as in the
// distribution's libtomlplusplus, without turning them into assumptions.
#pragma once
#define TOML_ASSERT(expr) ((void)0)
