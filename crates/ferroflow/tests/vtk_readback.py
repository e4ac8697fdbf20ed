"""Reads a ferroflow run's VTK output back with the VTK library itself and checks it.

Usage: python vtk_readback.py RUN_DIR PRECISION [REFERENCE_RUN_DIR]   (PRECISION: f64 or f32)

Checks the final fields (fields.vti, or fields.pvti with its pieces from a run over several
processes, read as one data set) and, if present, every data set listed in fields.pvd: grid size and spacing,
array names, component counts, data type, value ranges (lid velocity, w = 0 in 2D, p = 0 at the
reference node) and the u column at x = 0.5 against centerline_u.csv. With REFERENCE_RUN_DIR,
every array must also equal, value for value, the one VTK reads from the same file there (the
same run written another way, e.g. uncompressed). Exits non-zero on any failure. Called by the
Rust tests `vtk_files_read_back_with_the_vtk_library` and
`compressed_vtk_files_read_back_as_the_raw_ones`.
"""
import csv
import json
import math
import os
import sys
import xml.etree.ElementTree as ET

from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkCommonCore import VTK_DOUBLE, VTK_FLOAT
from vtkmodules.vtkIOXML import vtkXMLImageDataReader, vtkXMLPImageDataReader


def fail(message):
    print(f"vtk read-back FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def read(path, grid, precision):
    reader = vtkXMLPImageDataReader() if path.endswith(".pvti") else vtkXMLImageDataReader()
    reader.SetFileName(path)
    reader.Update()
    image = reader.GetOutput()
    dims = tuple(grid) + (1,) * (3 - len(grid))
    if image.GetDimensions() != dims:
        fail(f"{path}: dimensions {image.GetDimensions()}, expected {dims}")
    for d, n in enumerate(grid):
        if not math.isclose(image.GetSpacing()[d], 1.0 / (n - 1)):
            fail(f"{path}: spacing {image.GetSpacing()}, expected 1/(n-1)")
    data = image.GetPointData()
    names = sorted(data.GetArrayName(i) for i in range(data.GetNumberOfArrays()))
    if names != ["p", "velocity"]:
        fail(f"{path}: arrays {names}, expected p and velocity")
    points = math.prod(dims)
    expected_type = VTK_DOUBLE if precision == "f64" else VTK_FLOAT
    arrays = {}
    for name, components in [("p", 1), ("velocity", 3)]:
        array = data.GetArray(name)
        if array.GetNumberOfComponents() != components:
            fail(f"{path}: {name} has {array.GetNumberOfComponents()} components")
        if array.GetNumberOfTuples() != points:
            fail(f"{path}: {name} has {array.GetNumberOfTuples()} tuples, expected {points}")
        if array.GetDataType() != expected_type:
            fail(f"{path}: {name} has VTK type {array.GetDataType()}, expected {precision}")
        arrays[name] = vtk_to_numpy(array).reshape(dims[2], dims[1], dims[0], -1)
    return arrays


def check_values(path, arrays, grid, final):
    p, vel = arrays["p"][..., 0], arrays["velocity"]
    if not (p == p).all() or not abs(p).max() < 1e6:
        fail(f"{path}: p is not finite")
    centre = tuple(n // 2 for n in reversed(grid + [1] * (3 - len(grid))))
    if p[centre] != 0.0:
        fail(f"{path}: p at the reference node is {p[centre]}, expected 0")
    u_lid = vel[:, -1, 1:-1, 0]
    if not (u_lid == 1.0).all():
        fail(f"{path}: u on the lid is not the lid velocity 1")
    if not (-1.0 < vel[..., 0].min() < 0.0 and abs(vel[..., 1]).max() < 1.0):
        fail(f"{path}: velocity range u {vel[..., 0].min()}..{vel[..., 0].max()} implausible")
    if len(grid) == 2 and (vel[..., 2] != 0.0).any():
        fail(f"{path}: w is not zero in 2D")
    if final:
        # Odd grids have a node column at x = 0.5 (and z = 0.5): the profile is exact there.
        with open(os.path.join(os.path.dirname(path), "centerline_u.csv")) as f:
            rows = list(csv.DictReader(f))
        k = grid[2] // 2 if len(grid) == 3 else 0
        column = vel[k, :, grid[0] // 2, 0]
        profile = [float(r["u"]) for r in rows]
        if len(profile) != len(column) or max(abs(a - b) for a, b in zip(profile, column)) > 1e-6:
            fail(f"{path}: u at x = 0.5 differs from centerline_u.csv")


def final_fields(run):
    """The final fields of a run: fields.pvti (pieces written by several processes) or fields.vti."""
    pvti = os.path.join(run, "fields.pvti")
    return pvti if os.path.exists(pvti) else os.path.join(run, "fields.vti")


def snapshot_in(run, path):
    """The snapshot of `run` at the iteration of snapshot `path`: the same file name, or the one
    file of one process where `path` is the index of several processes' pieces."""
    there = os.path.join(run, os.path.basename(path))
    if not os.path.exists(there) and there.endswith(".pvti"):
        there = there[: -len(".pvti")] + ".vti"
    return there


def main():
    run, precision = sys.argv[1], sys.argv[2]
    reference = sys.argv[3] if len(sys.argv) > 3 else None
    with open(os.path.join(run, "summary.json")) as f:
        grid = json.load(f)["grid"]
    files = [(final_fields(run), True)]
    pvd = os.path.join(run, "fields.pvd")
    if os.path.exists(pvd):
        sets = ET.parse(pvd).getroot().find("Collection").findall("DataSet")
        steps = [int(s.get("timestep")) for s in sets]
        last = os.path.basename(files[0][0])
        if len(sets) < 2 or steps != sorted(steps) or sets[-1].get("file") != last:
            fail(f"{pvd}: expected several data sets in iteration order ending with {last}")
        files += [(os.path.join(run, s.get("file")), False) for s in sets[:-1]]
    for path, final in files:
        arrays = read(path, grid, precision)
        check_values(path, arrays, grid, final)
        if reference is not None:
            there = final_fields(reference) if final else snapshot_in(reference, path)
            other = read(there, grid, precision)
            for name, values in arrays.items():
                if not (values == other[name]).all():
                    fail(f"{path}: {name} differs from the one in {reference}")
    print(f"vtk read-back ok: {len(files)} file(s) in {run}")


main()
