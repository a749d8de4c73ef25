// Loom: algorithms as Funcs, schedules as Schedules, compiled through LLVM.
#pragma once

#include "loom/Buffer.h"
#include "loom/Error.h"
#include "loom/Expr.h"
#include "loom/Func.h"
#include "loom/Generator.h"
#include "loom/IR.h"
#include "loom/IROperator.h"
#include "loom/Interpreter.h"
#include "loom/Param.h"
#include "loom/Pipeline.h"
#include "loom/Schedule.h"
#include "loom/Target.h"
#include "loom/Type.h"
#include "loom/Var.h"
