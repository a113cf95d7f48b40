// A header for the ui tests of the preprocessor.
#pragma once
#define SCALE(x, factor) ((x) * (factor))
