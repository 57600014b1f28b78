"""The sigmoid table of the int16 TANH and SIGMOID functions: sigmoid(i / 24) in Q0.16 for i = 0..255.

One table, three users that must agree bit for bit:

* TFLite's int16 LOGISTIC and TANH reference kernels (``sigmoid_table_uint16`` of
  ``tensorflow/lite/kernels/internal/common.h``, interpolated by ``reference_integer_ops::Logistic`` and ``Tanh``
  in ``reference/integer_ops/logistic.h`` / ``tanh.h``; tanh(x) = 2 sigmoid(2x) - 1 from the same table), which
  the firmware's TFLite Micro port runs on the CPU (``firmware/tflm/kernels/activations.py``);
* the Ethos-U85's ``LUT_SIGMOID`` / ``LUT_TANH`` activation functions, whose 512-word interpolating table Vela
  builds from these values (Regor's ``ConvertTanhSigmoidToLUT16``, "Table of sigmoid(i/24)*65536", the same 256
  numbers) and loads into the LUT RAM;
* the Ethos-U55/U65's built-in ``SIGMOID`` / ``TANH`` activation functions, which take no table from software
  [inferred: the hardware is designed to give TFLite's int16 results, which need exactly this table; Vela lowers
  int16 LOGISTIC/TANH to them with TFLite's input scaling and no LUT].

The values are tuned (not a plain rounding of sigmoid); entry 0 is 1/2, entry 255 is 65535.
"""

from __future__ import annotations

#: the input value 1.0 of the functions: their input is in units of 1 / (3 * 4096), the scale TFLite's int16
#: Prepare rescales to ("input scale to 1/(3*4096)") and Vela's OFM scaling gives the value before them (Regor
#: ``TanhSigmoidScale``; an elementwise operation with a fused TANH/SIGMOID gets the output scale 1 / 0x3000)
INPUT_ONE = 3 * 4096

#: table entries per 1.0 of sigmoid's argument (entry i is sigmoid(i / 24))
STEPS_PER_ONE = 24

SIGMOID_TABLE_U16 = (
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
)
assert len(SIGMOID_TABLE_U16) == 256
