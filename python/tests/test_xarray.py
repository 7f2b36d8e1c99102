"""mapfilter.xarray: rioxarray metadata kept; Dask identity on a LocalCluster."""

import numpy as np
import pytest

import mapfilter
import mapfilter.xarray as mxr

xr = pytest.importorskip("xarray")
rioxarray = pytest.importorskip("rioxarray")

from conftest import landcover


def dataarray(data, nodata=None, res=100.0):
    height, width = data.shape
    x = 500000 + res * (np.arange(width) + 0.5)
    y = 6000000 - res * (np.arange(height) + 0.5)
    da = xr.DataArray(data, dims=("y", "x"), coords={"y": y, "x": x}, name="landcover")
    da.attrs["long_name"] = "land cover"
    da = da.rio.write_crs("EPSG:32633")
    if nodata is not None:
        da = da.rio.write_nodata(nodata)
    return da


def test_metres_nodata_coords_attrs_and_crs_are_kept():
    data = landcover()
    data[20:40, 30:60] = 0
    da = dataarray(data, nodata=0)
    out = mxr.smooth(da, "gaussian:250m")
    np.testing.assert_array_equal(out.values, mapfilter.smooth(data, "gaussian:2.5", nodata=0))
    assert out.rio.crs == da.rio.crs
    assert out.rio.nodata == 0
    assert out.attrs == da.attrs and out.name == "landcover"
    np.testing.assert_array_equal(out.x, da.x)
    np.testing.assert_array_equal(out.y, da.y)
    assert out.rio.transform() == da.rio.transform()


def test_a_geographic_grid_converts_metres_at_its_centre_latitude():
    data = landcover(60, 80)
    da = xr.DataArray(
        data,
        dims=("y", "x"),
        coords={"y": 60.0 - 0.001 * (np.arange(60) + 0.5), "x": 10.0 + 0.001 * (np.arange(80) + 0.5)},
    ).rio.write_crs("EPSG:4326")
    width = mxr.pixel_width(da)
    # 0.001° of longitude at 60°N: about 55.8 m.
    assert width == pytest.approx(55.8, abs=0.1)


def test_more_than_two_dimensions_are_refused():
    da = xr.DataArray(np.zeros((2, 3, 4), dtype=np.uint8))
    with pytest.raises(mapfilter.Error, match="select one band"):
        mxr.smooth(da, "box:3")


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.parametrize(
    "kernel,options",
    [
        ("gaussian:250m", {}),
        ("box:5", {"iterations": 2, "class_weights": {3: 2.0}}),
        ("gaussian:2", {"method": "dct5", "exact": True}),
    ],
)
def test_dask_chunks_give_the_bytes_of_one_run(client, kernel, options):
    data = landcover(157, 203)
    data[50:70, 100:140] = 0
    da = dataarray(data, nodata=0)
    whole = mxr.smooth(da, kernel, **options)
    # Chunks that divide neither side, on two worker processes.
    lazy = mxr.smooth(da.chunk({"y": 41, "x": 58}), kernel, **options)
    assert lazy.chunks == ((41, 41, 41, 34), (58, 58, 58, 29))
    computed = client.compute(lazy).result()
    assert len(client.scheduler_info()["workers"]) == 2
    np.testing.assert_array_equal(computed.values, whole.values)
    assert computed.rio.crs == da.rio.crs
    # And the chunks did not see the whole raster: one chunk alone differs
    # near its cut edges.
    alone = mapfilter.smooth(data[:41, :58], kernel.replace("250m", "2.5"), nodata=0,
                             **{k: v for k, v in options.items()})
    assert (alone != whole.values[:41, :58]).any()
