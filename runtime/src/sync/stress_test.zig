const std = @import("std");
